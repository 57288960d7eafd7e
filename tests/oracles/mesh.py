"""A generated triangular mesh at the sizes of seed 000's FVM nabla (5440 vertices, 16167 edges).

An 80 x 68 vertex grid, periodic in x (a cylinder), each quad split by a diagonal: 16160 edges.
Seven chords between vertices two apart on the bottom row bring the count to 16167. Interior
vertices have 6 edges, so the V2E table (width 7) pads every vertex with the skip value -1.
"""

import numpy as np

NX, NY = 80, 68


def vid(x, y):
    return (y * NX) + (x % NX)


def make_mesh():
    edges = []
    for y in range(NY):
        for x in range(NX):
            edges.append((vid(x, y), vid(x + 1, y)))  # along x (periodic)
            if y + 1 < NY:
                edges.append((vid(x, y), vid(x, y + 1)))  # along y
                edges.append((vid(x, y), vid(x + 1, y + 1)))  # diagonal
    for i in range(7):
        x = 10 * i
        edges.append((vid(x, 0), vid(x + 2, 0)))
    e2v = np.array(edges, dtype=np.int32)
    n_vertices = NX * NY
    v2e = -np.ones((n_vertices, 7), dtype=np.int32)
    fill = np.zeros(n_vertices, dtype=np.int64)
    for e, (a, b) in enumerate(edges):
        for v in (a, b):
            v2e[v, fill[v]] = e
            fill[v] += 1
    assert fill.max() <= 7
    return e2v, v2e


if __name__ == "__main__":
    e2v, v2e = make_mesh()
    print(e2v.shape, v2e.shape, (v2e == -1).sum())
