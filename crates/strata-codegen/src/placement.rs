//! Where an entry computes (seed 003: compute follows data). An entry whose values live on a
//! GPU (`device = gpuN` in their types; `gpu:N` and `cuda:N` are the same device) runs its
//! kernels there: its arguments are copied to that device's memory, its results back. The
//! verifier has already refused every operation mixing devices, so the only question left is
//! which one device an entry's values name.

use strata_entity::Handle;
use strata_ir::{Device, Function, Module, Type, TypeArena};

/// Why an entry cannot be placed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlacementError {
    /// A device name no back end runs.
    #[error("`@{func}`: no back end runs device `{device}` (devices: `cpu`, `gpuN` for CUDA GPU N)")]
    UnknownDevice {
        /// The entry.
        func: String,
        /// The device named.
        device: String,
    },
    /// Values on two GPUs: one entry runs on one device.
    #[error("`@{func}` has values on `{first}` and on `{second}`: an entry runs on one GPU (split it into one entry per device)")]
    TwoGpus {
        /// The entry.
        func: String,
        /// One device.
        first: String,
        /// Another.
        second: String,
    },
}

/// The CUDA device ordinal a device name denotes: `gpu0`, `gpu:0`, `cuda:0`; `None` for
/// another name.
pub fn gpu_ordinal(device: &str) -> Option<u32> {
    let n =
        device.strip_prefix("gpu:").or_else(|| device.strip_prefix("cuda:")).or_else(|| device.strip_prefix("gpu"))?;
    n.parse().ok()
}

/// The GPU `entry` computes on: the one its values' types place them on, `None` when every
/// value is on the host.
///
/// # Errors
/// A device name no back end runs, or values on two GPUs.
pub fn entry_gpu(module: &Module, types: &TypeArena, entry: Handle<Function>) -> Result<Option<u32>, PlacementError> {
    let f = &module.functions[entry];
    let mut found: Option<(u32, String)> = None;
    for (_, e) in f.exprs.iter() {
        let Type::Tensor(t) = &types[e.ty] else { continue };
        let Device::Named(name) = &t.placement.device else { continue };
        let Some(ordinal) = gpu_ordinal(name) else {
            return Err(PlacementError::UnknownDevice { func: f.name.clone(), device: name.clone() });
        };
        match &found {
            Some((k, first)) if *k != ordinal => {
                return Err(PlacementError::TwoGpus {
                    func: f.name.clone(),
                    first: first.clone(),
                    second: name.clone(),
                })
            }
            Some(_) => {}
            None => found = Some((ordinal, name.clone())),
        }
    }
    Ok(found.map(|(k, _)| k))
}

#[cfg(test)]
mod tests {
    use super::gpu_ordinal;

    #[test]
    fn device_names_denote_ordinals() {
        assert_eq!(gpu_ordinal("gpu0"), Some(0));
        assert_eq!(gpu_ordinal("gpu:3"), Some(3));
        assert_eq!(gpu_ordinal("cuda:1"), Some(1));
        assert_eq!(gpu_ordinal("level_zero:gpu:1"), None);
        assert_eq!(gpu_ordinal("gpux"), None);
    }
}
