//! Where data lives and where a realisation runs: a [`Device`] (the host or a CUDA device, named
//! as PyTorch names them) and a [`Target`] (the backend one realisation runs on: the reference
//! interpreter, the cranelift JIT, or a CUDA device).

use smelt_ir::{Error, Result};
use std::cell::Cell;
use std::fmt;

/// Where a tensor's storage lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub enum Device {
    /// Host memory.
    #[default]
    Cpu,
    /// A CUDA device by ordinal.
    Cuda(usize),
}

impl Device {
    /// Parses `cpu`, `cuda`, `cuda:N`.
    pub fn parse(s: &str) -> Result<Device> {
        match s.trim() {
            "cpu" => Ok(Device::Cpu),
            "cuda" => Ok(Device::Cuda(0)),
            other => other
                .strip_prefix("cuda:")
                .and_then(|n| n.parse().ok())
                .map(Device::Cuda)
                .ok_or_else(|| {
                    Error::value(format!(
                        "unknown device '{other}': expected cpu, cuda or cuda:N"
                    ))
                }),
        }
    }

    /// The device `SMELT_DEVICE` names (`cpu` when unset or empty); a `value` error for a
    /// name [`Device::parse`] does not know.
    pub fn from_env() -> Result<Device> {
        match std::env::var("SMELT_DEVICE") {
            Ok(s) if !s.trim().is_empty() => Device::parse(&s),
            Ok(_) | Err(_) => Ok(Device::Cpu),
        }
    }

    /// Is this a CUDA device?
    pub fn is_cuda(self) -> bool {
        matches!(self, Device::Cuda(_))
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Device::Cpu => f.write_str("cpu"),
            Device::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

/// The backend one realisation runs on, chosen once for the whole schedule: the device its
/// storages live on, and for the host which of the two host backends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// The kernel IR interpreter (`reference.rs`), the oracle.
    Reference,
    /// Cranelift-compiled native code (`cpu.rs`).
    Cpu,
    /// CUDA C compiled by NVRTC, run on device `n` (`cuda/`).
    Cuda(usize),
}

impl Target {
    /// The host backends, which every machine has (tests run on each: STYLE 12).
    pub const HOST: [Target; 2] = [Target::Reference, Target::Cpu];

    /// Every backend this process can run on: the host ones, then each usable CUDA device.
    pub fn available() -> Vec<Target> {
        let mut all = Target::HOST.to_vec();
        all.extend((0..crate::cuda::device_count()).map(Target::Cuda));
        all
    }

    /// Where the buffers of a realisation on this target live.
    pub fn device(self) -> Device {
        match self {
            Target::Reference | Target::Cpu => Device::Cpu,
            Target::Cuda(n) => Device::Cuda(n),
        }
    }

    /// The target for storages on `device`: the host backend `SMELT_BACKEND` names
    /// ([`Target::host_from_env`]) for the host, else that CUDA device.
    pub fn for_device(device: Device) -> Target {
        match device {
            Device::Cpu => Target::host_from_env(),
            Device::Cuda(n) => Target::Cuda(n),
        }
    }

    /// The host backend `SMELT_BACKEND=reference|cpu` names (`cpu` when unset or unknown),
    /// unless [`with_host_target`] chose one for this thread.
    pub fn host_from_env() -> Target {
        if let Some(target) = HOST_HERE.with(Cell::get) {
            return target;
        }
        match std::env::var("SMELT_BACKEND").as_deref() {
            Ok("reference") => Target::Reference,
            _ => Target::Cpu,
        }
    }

    /// `reference`, `cpu` or `cuda:N`.
    pub fn name(self) -> String {
        match self {
            Target::Reference => "reference".to_string(),
            Target::Cpu => "cpu".to_string(),
            Target::Cuda(n) => format!("cuda:{n}"),
        }
    }
}

thread_local! {
    /// The host backend [`with_host_target`] chose for this thread, over `SMELT_BACKEND`.
    static HOST_HERE: Cell<Option<Target>> = const { Cell::new(None) };
}

/// Runs `f` with `target` (a host target) as this thread's host backend, in place of
/// `SMELT_BACKEND`: every realisation of host tensors inside `f` on this thread runs there,
/// the implicit ones (a `nonzero`, a read of values) included. `smelt fuzz` runs one program
/// on each host backend this way, several threads each on their own.
pub fn with_host_target<R>(target: Target, f: impl FnOnce() -> R) -> R {
    assert!(
        !target.device().is_cuda(),
        "invariant: with_host_target takes a host target, not {target}"
    );
    struct Restore(Option<Target>);
    impl Drop for Restore {
        fn drop(&mut self) {
            HOST_HERE.with(|h| h.set(self.0));
        }
    }
    let _restore = Restore(HOST_HERE.with(|h| h.replace(Some(target))));
    f()
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_torch_names() {
        assert_eq!(Device::parse("cpu"), Ok(Device::Cpu));
        assert_eq!(Device::parse("cuda"), Ok(Device::Cuda(0)));
        assert_eq!(Device::parse("cuda:3"), Ok(Device::Cuda(3)));
        assert_eq!(Device::Cuda(1).to_string(), "cuda:1");
        assert_eq!(
            Device::parse("tpu").map_err(|e| e.kind),
            Err(smelt_ir::ErrorKind::Value)
        );
        assert_eq!(
            Device::parse("cuda:x").map_err(|e| e.kind),
            Err(smelt_ir::ErrorKind::Value)
        );
    }

    #[test]
    fn a_target_runs_where_its_storages_live() {
        assert_eq!(Target::Reference.device(), Device::Cpu);
        assert_eq!(Target::Cpu.device(), Device::Cpu);
        assert_eq!(Target::Cuda(2).device(), Device::Cuda(2));
        assert_eq!(Target::for_device(Device::Cuda(1)), Target::Cuda(1));
        assert!(Target::HOST.contains(&Target::for_device(Device::Cpu)));
        let all = Target::available();
        assert_eq!(all[..2], Target::HOST);
        assert!(all[2..].iter().all(|t| t.device().is_cuda()));
    }

    #[test]
    fn a_thread_can_choose_its_host_backend() {
        let outside = Target::host_from_env();
        let inside = with_host_target(Target::Reference, || {
            let nested = with_host_target(Target::Cpu, Target::host_from_env);
            (
                Target::host_from_env(),
                nested,
                Target::for_device(Device::Cpu),
            )
        });
        assert_eq!(inside, (Target::Reference, Target::Cpu, Target::Reference));
        assert_eq!(Target::host_from_env(), outside);
        // Other threads keep SMELT_BACKEND's choice.
        with_host_target(Target::Reference, || {
            let other = std::thread::spawn(Target::host_from_env).join().unwrap();
            assert_eq!(other, outside);
        });
    }
}
