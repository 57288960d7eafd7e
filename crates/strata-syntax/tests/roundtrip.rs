//! Round-trip property: for randomly generated modules that use every op, type form and
//! attribute shape, `parse(print(m)) == m` and printing is idempotent. The generated modules
//! need not verify: the round trip is a property of the text format alone.

use proptest::prelude::*;
use strata_entity::{Arena, Handle};
use strata_ir::*;

/// A small deterministic generator (xorshift64*), driven by proptest's seed.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
    fn flip(&mut self) -> bool {
        self.next() & 1 == 1
    }
    fn pick<T: Clone>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())].clone()
    }
}

const DIMS: &[&str] = &["I", "J", "K", "Vertex", "Edge", "NB_0", "NB_1", "NB_Vertex", "x"];

fn scalar(g: &mut Gen) -> Scalar {
    g.pick(&Scalar::ALL)
}

fn format(g: &mut Gen) -> LevelFormat {
    let extent = |g: &mut Gen| if g.flip() { Extent::Dynamic } else { Extent::Static(g.range(0, 99) as u64) };
    match g.below(6) {
        0 => LevelFormat::Compressed { unique: g.flip(), ordered: g.flip(), nnz: extent(g) },
        1 => LevelFormat::Singleton { unique: g.flip(), ordered: g.flip() },
        2 => LevelFormat::Ragged { total: extent(g) },
        3 => LevelFormat::Block,
        _ => LevelFormat::Dense,
    }
}

fn gen_type(g: &mut Gen, types: &mut TypeArena, depth: u32) -> Handle<Type> {
    match if depth == 0 { 0 } else { g.below(4) } {
        0 => types.insert(Type::Scalar(scalar(g))),
        1 => {
            let n = 1 + g.below(3);
            let fields = (0..n).map(|_| gen_type(g, types, depth - 1)).collect();
            types.insert(Type::Tuple(fields))
        }
        _ => {
            let element = gen_type(g, types, depth - 1);
            let positional = g.flip();
            let rank = g.below(4);
            let mut levels = Vec::new();
            for i in 0..rank {
                if positional {
                    levels.push(Level::dense(DimName::positional(i), Interval::from_len(g.range(1, 64) as u64)));
                } else {
                    let start = g.range(-5, 5);
                    levels.push(Level {
                        name: DimName::new(DIMS[(i + g.below(3)) % DIMS.len()]),
                        interval: Interval::new(start, start + g.range(0, 40)),
                        format: format(g),
                    });
                }
            }
            let device = match g.below(3) {
                0 => Device::Named("gpu0".into()),
                1 => Device::Named("level_zero:gpu:1".into()),
                _ => Device::Cpu,
            };
            let team = g.flip().then(|| Team { ranks: g.range(1, 8) as u32 });
            types.insert(Type::Tensor(TensorType { element, levels, placement: Placement { device, team } }))
        }
    }
}

fn literal(g: &mut Gen, depth: u32) -> Literal {
    match g.below(if depth == 0 { 4 } else { 5 }) {
        0 => Literal::Bool(g.flip()),
        1 => Literal::Int(g.pick(&[0, 1, -7, i64::MAX, i64::MIN, 4096])),
        2 => Literal::Float(g.pick(&[0.0, -0.5, 1e300, 2.5e-8, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 3.0])),
        3 => Literal::Float(g.range(-1000, 1000) as f64 / 8.0),
        _ => Literal::Tuple((0..1 + g.below(3)).map(|_| literal(g, depth - 1)).collect()),
    }
}

/// Between `min` and `max - 1` small numbers.
fn u32s(g: &mut Gen, min: usize, max: usize) -> Vec<u32> {
    let n = min + g.below(max - min);
    (0..n).map(|_| g.range(0, 5) as u32).collect()
}

fn pack_layout(g: &mut Gen) -> PackLayout {
    PackLayout { inner_dims_pos: u32s(g, 0, 3), outer_dims_perm: u32s(g, 0, 3) }
}

/// Between `min` and `max - 1` extents.
fn u64s(g: &mut Gen, min: usize, max: usize) -> Vec<u64> {
    let n = min + g.below(max - min);
    (0..n).map(|_| g.range(1, 64) as u64).collect()
}

fn val(g: &mut Gen, vals: &[Value]) -> Value {
    vals[g.below(vals.len())]
}

fn some(g: &mut Gen, vals: &[Value]) -> Vec<Value> {
    let n = 1 + g.below(3);
    (0..n).map(|_| val(g, vals)).collect()
}

fn affine_map(g: &mut Gen, dims: u32) -> AffineMap {
    let results = (0..g.below(4))
        .map(|_| {
            let mut e = AffineExpr::default();
            for _ in 0..g.below(3) {
                e.add_term(g.range(0, dims as i64 - 1) as u32, g.pick(&[-3, -1, 1, 2, i64::MIN, i64::MAX]));
            }
            e.constant = g.range(-4, 4);
            // Semi-affine terms: `(…) floordiv k`, `(…) mod k`, nested once at most.
            for _ in 0..g.below(3) {
                let mut inner = AffineExpr::dim(g.range(0, dims as i64 - 1) as u32);
                inner.add_constant(g.range(-3, 3));
                if g.flip() {
                    inner = inner.quotient(QuotientOp::Mod, g.range(1, 9));
                }
                let op = if g.flip() { QuotientOp::FloorDiv } else { QuotientOp::Mod };
                e.add_quotient(Quotient { inner: Box::new(inner), op, by: g.range(1, 64) }, g.pick(&[-2, -1, 1, 3]));
            }
            e
        })
        .collect();
    AffineMap { num_dims: dims, results }
}

fn dim(g: &mut Gen) -> DimName {
    DimName::new(g.pick(DIMS))
}

fn gen_op(g: &mut Gen, vals: &[Value], funcs: &[Handle<Function>], ring: Handle<Ring>) -> Op {
    let f = funcs[g.below(funcs.len())];
    let init = |g: &mut Gen, vals: &[Value]| {
        if g.flip() {
            Init::Literal(literal(g, 1))
        } else {
            Init::Value(vals[g.below(vals.len())])
        }
    };
    let mode = |g: &mut Gen| if g.flip() { Mode::Copy } else { Mode::View };
    let ring_ref =
        |g: &mut Gen| if g.flip() { RingRef::User(ring) } else { RingRef::Builtin(g.pick(BuiltinRing::ALL)) };
    match g.below(40) {
        0 => Op::Constant { value: literal(g, 2) },
        1 => Op::Unary { op: g.pick(UnaryOp::ALL), arg: val(g, vals) },
        2 => Op::Binary { op: g.pick(BinaryOp::ALL), lhs: val(g, vals), rhs: val(g, vals) },
        3 => Op::Select { cond: val(g, vals), on_true: val(g, vals), on_false: val(g, vals) },
        4 => Op::Cast { arg: val(g, vals), to: scalar(g) },
        5 => Op::MakeTuple { fields: some(g, vals) },
        6 => Op::TupleGet { tuple: val(g, vals), index: g.range(0, 3) as u32 },
        7 => Op::Call { func: f, args: some(g, vals), result: 0 },
        8 => Op::CartesianShift { arg: val(g, vals), dim: dim(g), offset: g.range(-3, 3) },
        9 => Op::ShiftInit { arg: val(g, vals), table: val(g, vals) },
        10 => Op::ShiftApply { arg: val(g, vals), neighbor: g.range(-1, 6) },
        11 => Op::UnstructuredShift { arg: val(g, vals), table: val(g, vals), neighbor: g.range(0, 6) },
        12 => Op::CanDeref { arg: val(g, vals) },
        13 => Op::Reduce { func: f, args: some(g, vals), init: literal(g, 1) },
        14 => Op::Scan {
            func: f,
            args: some(g, vals),
            dim: dim(g),
            forward: g.flip(),
            init: Init::Literal(literal(g, 2)),
        },
        15 => Op::Subset {
            arg: val(g, vals),
            domain: (0..g.below(3)).map(|_| (dim(g), Interval::new(g.range(-3, 3), g.range(3, 9)))).collect(),
        },
        16 => Op::Concat { args: some(g, vals), dim: dim(g), mode: mode(g) },
        17 => Op::Pos { arg: val(g, vals), dim: dim(g) },
        18 => Op::AddDim { arg: val(g, vals), dim: dim(g), interval: Interval::new(g.range(-3, 0), g.range(0, 9)) },
        19 => {
            let args = some(g, vals);
            let letters = ['i', 'j', 'k', 'l', 'b'];
            let inputs = args.iter().map(|_| (0..g.below(4)).map(|_| g.pick(&letters)).collect()).collect();
            let output = letters[..g.below(4)].to_vec();
            Op::MapReduce { func: f, args, init: init(g, vals), subscripts: Einsum { inputs, output } }
        }
        20 => {
            let args = some(g, vals);
            let d = 1 + g.below(5) as u32;
            let maps = args.iter().map(|_| affine_map(g, d)).collect();
            Op::MapReduceAff {
                func: f,
                args,
                init: init(g, vals),
                domain: u64s(g, d as usize, d as usize + 1),
                outputs: g.range(0, d as i64) as u32,
                shape: u64s(g, 0, 3),
                out_map: affine_map(g, d),
                maps,
                padding: g.flip().then(|| literal(g, 1)),
            }
        }
        21 => Op::DotGeneral {
            lhs: val(g, vals),
            rhs: val(g, vals),
            ring: ring_ref(g),
            lhs_contract: u32s(g, 0, 3),
            rhs_contract: u32s(g, 0, 3),
            lhs_batch: u32s(g, 0, 2),
            rhs_batch: u32s(g, 0, 2),
        },
        22 => Op::Product2d { lhs: val(g, vals), rhs: val(g, vals), ring: ring_ref(g) },
        23 => Op::Transpose {
            arg: val(g, vals),
            perm: u32s(g, 0, 4),
            kind: if g.flip() { strata_ir::PermKind::Gather } else { strata_ir::PermKind::Scatter },
        },
        24 => Op::Broadcast { arg: val(g, vals), shape: u64s(g, 0, 4) },
        25 => Op::BroadcastInDim { arg: val(g, vals), shape: u64s(g, 0, 4), dims: u32s(g, 0, 3) },
        26 => Op::Map { kind: g.pick(MapKind::ALL), func: f, args: some(g, vals) },
        27 => Op::Get { arg: val(g, vals), indices: some(g, vals) },
        28 => Op::Set { arg: val(g, vals), indices: some(g, vals), value: val(g, vals) },
        29 => Op::Pack {
            arg: val(g, vals),
            tile: u64s(g, 0, 3),
            layout: pack_layout(g),
            padding: g.flip().then(|| literal(g, 1)),
        },
        30 => Op::Unpack { arg: val(g, vals), layout: pack_layout(g), shape: u64s(g, 0, 3) },
        31 => Op::Gather { source: val(g, vals), indices: val(g, vals), coordinates: u32s(g, 0, 3), mode: mode(g) },
        32 => Op::Scatter {
            source: val(g, vals),
            dest: val(g, vals),
            indices: val(g, vals),
            coordinates: u32s(g, 0, 3),
            mode: mode(g),
        },
        33 => Op::CollapseShape {
            arg: val(g, vals),
            groups: (0..g.below(3)).map(|_| u32s(g, 1, 3)).collect(),
            mode: mode(g),
        },
        34 => Op::ExpandShape {
            arg: val(g, vals),
            groups: (0..g.below(3)).map(|_| u32s(g, 1, 3)).collect(),
            shape: u64s(g, 0, 4),
            mode: mode(g),
        },
        35 => Op::Convert { arg: val(g, vals), mode: mode(g) },
        36 => Op::ToDevice {
            arg: val(g, vals),
            device: if g.flip() { Device::Cpu } else { Device::Named("gpu:1".into()) },
        },
        37 => Op::Distribute { arg: val(g, vals), ranks: g.range(1, 16) as u32, dim: dim(g) },
        _ => Op::Collect { arg: val(g, vals) },
    }
}

fn helper(types: &mut TypeArena, name: &str, ty: Handle<Type>, arity: usize) -> Function {
    let mut exprs = Arena::new();
    let params: Vec<Value> = (0..arity)
        .map(|i| exprs.append(Expr { name: format!("p{i}"), ty, kind: ExprKind::Param(ParamMode::In) }, Span::UNKNOWN))
        .collect();
    let mut body = Arena::new();
    body.append(Statement::Return(vec![params[0]]), SourceInfo::default());
    let _ = types;
    Function {
        name: name.into(),
        kind: FunctionKind::Func,
        params,
        results: vec![ty],
        exprs,
        body,
        closing_comments: vec![],
        untyped: Default::default(),
        inline: Default::default(),
        result_inferred: false,
        instance_of: None,
    }
}

fn gen_module(seed: u64) -> Module {
    let mut g = Gen(seed | 1);
    let mut m = Module::default();
    let f64t = m.types.insert(Type::Scalar(Scalar::F64));
    let alias_ty = gen_type(&mut g, &mut m.types, 2);
    let a = m.aliases.append(TypeAlias { name: "T".into(), ty: alias_ty }, SourceInfo::default());
    m.items.push(Item::Alias(a));
    let mut funcs = Vec::new();
    for (i, arity) in [2usize, 3].iter().enumerate() {
        let f = helper(&mut m.types, &format!("h{i}"), f64t, *arity);
        let h = m.functions.append(f, SourceInfo::default());
        m.items.push(Item::Function(h));
        funcs.push(h);
    }
    let ring = m.rings.append(
        Ring { name: "r".into(), element: Scalar::F64, zero: literal(&mut g, 0), add: funcs[0], mul: funcs[0] },
        SourceInfo::default(),
    );
    m.items.push(Item::Ring(ring));
    let program = g.flip();
    let mut exprs = Arena::new();
    let mut params = Vec::new();
    for i in 0..1 + g.below(3) {
        let ty = gen_type(&mut g, &mut m.types, 3);
        let mode = if program && i == 0 { ParamMode::Out } else { ParamMode::In };
        params.push(exprs.append(Expr { name: format!("a{i}"), ty, kind: ExprKind::Param(mode) }, Span::UNKNOWN));
    }
    let mut vals = params.clone();
    let mut body = Arena::new();
    for i in 0..1 + g.below(12) {
        let op = gen_op(&mut g, &vals, &funcs, ring);
        let ty = if g.below(4) == 0 { alias_ty } else { gen_type(&mut g, &mut m.types, 3) };
        let name = if g.flip() { format!("v{i}") } else { format!("{i}") };
        let e = exprs.append(Expr { name, ty, kind: ExprKind::Op(op) }, Span::UNKNOWN);
        let leading = if g.below(5) == 0 { vec![" a comment".to_string()] } else { vec![] };
        let trailing = if g.below(5) == 0 { vec![" trailing".to_string()] } else { vec![] };
        body.append(Statement::Let(e), SourceInfo { span: Span::UNKNOWN, leading, trailing });
        vals.push(e);
    }
    if program {
        let domain = g.flip().then(|| vec![(DimName::new("I"), Interval::new(-1, 4))]);
        body.append(
            Statement::Assign { target: params[0], domain, value: *vals.last().unwrap() },
            SourceInfo::default(),
        );
    }
    // A function returns one value or, sometimes, two (`-> T1, T2`).
    let mut results = Vec::new();
    if !program {
        let returned: Vec<Value> =
            if g.flip() { vec![*vals.last().unwrap()] } else { vec![val(&mut g, &vals), *vals.last().unwrap()] };
        results = returned.iter().map(|_| gen_type(&mut g, &mut m.types, 2)).collect();
        body.append(Statement::Return(returned), SourceInfo::default());
    }
    let kind = if program { FunctionKind::Program } else { FunctionKind::Func };
    let f = Function {
        name: "main".into(),
        kind,
        params,
        results,
        exprs,
        body,
        closing_comments: vec![" end".into()],
        untyped: Default::default(),
        inline: Default::default(),
        result_inferred: false,
        instance_of: None,
    };
    let h = m.functions.append(f, SourceInfo::default());
    m.items.push(Item::Function(h));
    m.trailing_comments = vec![" the end".into()];
    m
}

/// Re-interns the types of `m` in the order the printed text mentions them, as a parse would,
/// so that structural equality does not depend on the generator's interning order.
fn normalized(m: &Module) -> Module {
    strata_syntax::parse(&m.to_string()).expect("printed text parses")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn print_parse_round_trip(seed in any::<u64>()) {
        let m = gen_module(seed);
        let text = m.to_string();
        let parsed = match strata_syntax::parse(&text) {
            Ok(p) => p,
            Err(d) => panic!("printed module does not parse: {d:?}\n{text}"),
        };
        // Same text after a second print (idempotence) ...
        prop_assert_eq!(parsed.to_string(), text.clone());
        // ... and the same module up to the interning order of types.
        prop_assert_eq!(&parsed, &normalized(&parsed));
        // Function bodies, names and ops agree exactly with the generated module.
        for ((_, a), (_, b)) in m.functions.iter().zip(parsed.functions.iter()) {
            prop_assert_eq!(&a.name, &b.name);
            prop_assert_eq!(a.body.len(), b.body.len());
            for ((_, ea), (_, eb)) in a.exprs.iter().zip(b.exprs.iter()) {
                prop_assert_eq!(&ea.name, &eb.name);
                prop_assert_eq!(&ea.kind, &eb.kind);
                prop_assert_eq!(m.type_to_string(ea.ty), parsed.type_to_string(eb.ty));
            }
        }
    }
}

#[test]
#[ignore = "prints a sample of generated modules"]
fn show_samples() {
    for seed in 1..4 {
        println!("{}", gen_module(seed * 7919));
    }
}
