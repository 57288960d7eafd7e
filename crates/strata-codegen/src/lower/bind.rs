//! Binding parameters and results to buffers (dense, tuple, nested, sparse and ragged storage) and the stores of an output.

use super::*;

impl Lowerer<'_> {
    /// Buffers for a value of type `ty` (one per scalar leaf), and the symbolic value reading them.
    pub(super) fn bind(
        &mut self,
        name: &str,
        ty: Handle<Type>,
        param: Option<usize>,
        written: bool,
        func: &Function,
    ) -> Result<(Sym, Vec<usize>), LowerError> {
        let sparse = split(self.types, ty).0.iter().any(|l| !l.format.is_dense_like());
        if sparse {
            // Storage and the presence of an output are per scalar; a temporary (a scan's with
            // a tuple state) holds every field densely.
            if param.is_some() || name == "result" {
                self.check_storage(name, ty, func)?;
            }
            match (param, written) {
                (Some(_), false) => return Ok(self.bind_storage(name, ty, param)),
                // Results and `out` parameters are written in the logical form (values, and
                // for ragged types which exist), whatever their storage format; temporaries (a
                // scan's) hold their values densely, their readers decide what exists.
                (None, true) | (Some(_), true) => {}
                (None, false) => {
                    return Err(self.unsupported_type(format!("the sparse or ragged value `%{name}`"), func))
                }
            }
        }
        let (levels, element) = flat(self.types, ty).map_err(|w| self.unsupported_type(w, func))?;
        let mut ls = Vec::new();
        leaves(self.types, element, Vec::new(), &mut ls).map_err(|w| self.unsupported_type(w, func))?;
        let mut ids = Vec::new();
        let mut exprs = Vec::new();
        for (path, scalar) in ls {
            let suffix: String = path.iter().map(|i| format!(".f{i}")).collect();
            let id = self.buffers.len();
            self.buffers.push(Buffer {
                name: format!("{name}{suffix}"),
                scalar,
                levels: levels.clone(),
                param,
                field: path,
                written,
                temp: param.is_none() && name != "result",
                overwritten: false,
                role: Role::Elements,
            });
            ids.push(id);
            let coords = level_vars(&levels);
            exprs.push(Rc::new(SExpr::Load(Rc::new(Load { buffer: id, coords }))));
        }
        let written_out = name == "result" || (param.is_some() && written);
        if written_out && has_ragged(&split(self.types, ty).0) {
            // A ragged result or `out` parameter in the logical form: values, and which exist
            // (a sparse one's unstored entries are zeros, so its values are all there is).
            let mut presence = self.buffers[ids[0]].clone();
            presence.name = format!("{name}.present");
            presence.scalar = Scalar::U8;
            presence.role = Role::Presence;
            let at = self.buffers.len();
            ids.push(at);
            self.buffers.push(presence);
            // Read back (a program reading its `out` parameter), an element exists where the
            // presence says so.
            if param.is_some() {
                let present = Rc::new(SExpr::Load(Rc::new(Load { buffer: at, coords: level_vars(&levels) })));
                let exists =
                    Rc::new(SExpr::Binary(BinaryOp::Ne, present, Rc::new(SExpr::Const(Sv::U8(0))), Scalar::U8));
                let absent = Rc::new(SExpr::Absent(self.buffers[ids[0]].scalar));
                exprs = exprs.into_iter().map(|v| Rc::new(SExpr::Select(exists.clone(), v, absent.clone()))).collect();
            }
        }
        Ok((assemble(self.types, element, &mut exprs.into_iter()), ids))
    }

    /// The stores writing `leaves` into buffers `ids` (as [`Self::bind`] made them): one per
    /// leaf, and for a ragged result or `out` parameter which elements exist.
    pub(super) fn stores(&self, ids: &[usize], leaves: &[Rc<SExpr>]) -> Vec<Store> {
        let mut stores: Vec<Store> =
            ids.iter().zip(leaves).map(|(&buffer, value)| Store { buffer, value: value.clone() }).collect();
        if let (Some(&p), [leaf]) = (ids.last(), leaves) {
            if self.buffers[p].role == Role::Presence {
                stores.push(Store { buffer: p, value: Rc::new(SExpr::Present(leaf.clone())) });
            }
        }
        stores
    }

    /// Refuses sparse and ragged tensors whose elements are not scalars (storage and the
    /// presence of a result are per scalar).
    pub(super) fn check_storage(&self, name: &str, ty: Handle<Type>, func: &Function) -> Result<(), LowerError> {
        if !matches!(self.types[split(self.types, ty).1], Type::Scalar(_)) {
            return Err(
                self.unsupported_type(format!("sparse or ragged tensors of tuples or tensors (`%{name}`)"), func)
            );
        }
        Ok(())
    }

    /// The kernel writing a sparse function result as storage ([`crate::kernel::CompressedOut`]):
    /// for a result with compressed or singleton levels (no ragged ones) and scalar elements.
    /// `None` for every other result.
    pub(super) fn compressed_return(
        &mut self,
        func: &Function,
        rty: Handle<Type>,
        value: Sym,
    ) -> Result<Option<Kernel>, LowerError> {
        let levels = split(self.types, rty).0;
        if !levels.iter().any(|l| l.format.is_sparse()) || has_ragged(&levels) || levels.is_empty() {
            return Ok(None);
        }
        self.check_storage("result", rty, func)?;
        let scalar = self.element_scalar(rty);
        let last = levels.len() - 1;
        let domain = dense_levels(&levels);
        let outer = domain[..last].to_vec();
        let mut storage = |name: &str, scalar: Scalar, part: StoragePart| {
            self.buffers.push(Buffer {
                name: format!("result.{name}"),
                scalar,
                levels: outer.clone(),
                param: None,
                field: Vec::new(),
                written: true,
                temp: false,
                overwritten: false,
                role: Role::Storage(part),
            });
            self.buffers.len() - 1
        };
        let positions = storage("pos", Scalar::I64, StoragePart::Positions(last));
        let coordinates = storage("crd", coordinate_scalar(levels[last].interval), StoragePart::Coordinates(last));
        let values = storage("values", scalar, StoragePart::Values);
        let leaf = value.leaves().into_iter().next().expect("checked: scalar elements");
        let mut k = Kernel::nest(
            "return (the non-zeros of a sparse result)".into(),
            domain,
            vec![Store { buffer: values, value: leaf }],
        );
        k.kind = KernelKind::Nest(Nest {
            windows: Vec::new(),
            compressed: Some(crate::kernel::CompressedOut { positions, coordinates, workspace: None }),
            fold_strips: false,
        });
        Ok(Some(k))
    }

    /// The storage buffers of sparse or ragged parameter `name` (checked by
    /// [`Self::check_storage`]) in the formats [`crate::sparse::storage_formats`] chooses, and
    /// the value reading them.
    pub(super) fn bind_storage(&mut self, name: &str, ty: Handle<Type>, param: Option<usize>) -> (Sym, Vec<usize>) {
        let (levels, element) = split(self.types, ty);
        let mut ids = Vec::new();
        let mut buffer = |this: &mut Self, suffix: String, scalar: Scalar, part: StoragePart| {
            this.buffers.push(Buffer {
                name: format!("{name}.{suffix}"),
                scalar,
                levels: Vec::new(),
                param,
                field: Vec::new(),
                written: false,
                temp: false,
                overwritten: false,
                role: Role::Storage(part),
            });
            ids.push(this.buffers.len() - 1);
            this.buffers.len() - 1
        };
        let mut storage = Vec::new();
        let formats = crate::sparse::storage_formats(&levels);
        for (k, (l, format)) in levels.iter().zip(formats).enumerate() {
            storage.push(match format {
                LevelFormat::Compressed { .. } => crate::sparse::LevelStorage::Compressed {
                    positions: buffer(self, format!("pos{k}"), Scalar::I64, StoragePart::Positions(k)),
                    coordinates: buffer(
                        self,
                        format!("crd{k}"),
                        coordinate_scalar(l.interval),
                        StoragePart::Coordinates(k),
                    ),
                },
                LevelFormat::Ragged { .. } => crate::sparse::LevelStorage::Ragged {
                    offsets: buffer(self, format!("off{k}"), Scalar::I64, StoragePart::Offsets(k)),
                },
                _ => crate::sparse::LevelStorage::Dense { size: l.interval.len() },
            });
        }
        let scalar = self.element_scalar(element);
        let values = buffer(self, "values".into(), scalar, StoragePart::Values);
        self.sparse.push(crate::sparse::SparseTensor { name: name.into(), levels: levels.clone(), storage, values });
        let coords = level_vars(&levels);
        let read = crate::sym::SparseRead { tensor: self.sparse.len() - 1, coords };
        (Sym::Scalar(Rc::new(SExpr::Sparse(Rc::new(read)))), ids)
    }
}
