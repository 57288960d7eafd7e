//! Calls: what the callee's result must hold, its returned value must; the callee's parameters'
//! needs are the arguments'.

use std::collections::HashMap;

use strata_entity::Handle;
use strata_ir::{Function, Statement, Value};

use super::{Analysis, Gives, Need, Tables};
use crate::plan::PlanError;

impl<T: Tables> Analysis<'_, T> {
    /// The needs of the arguments of a call of `func` (in `fh`) whose result `result` must hold `n`.
    pub(super) fn call(
        &mut self,
        fh: Handle<Function>,
        func: Handle<Function>,
        args: &[Value],
        result: u32,
        n: &Need<T::R>,
    ) -> Result<Gives<T::R>, PlanError> {
        for (p, a) in self.module.functions[func].params.iter().zip(args) {
            if let Some(&i) = self.bound.get(&(fh, *a)) {
                self.bound.insert((func, *p), i);
            }
        }
        let callee = &self.module.functions[func];
        let mut seeds = HashMap::new();
        for (_, s) in callee.body.iter() {
            // What this value needs, the callee's result it is needs.
            if let Statement::Return(rs) = s {
                seeds.insert(rs[result as usize], n.clone());
            }
        }
        let params = self.function(func, seeds)?;
        Ok(args.iter().copied().zip(params).collect())
    }
}
