//! Where a computation runs: the host or a CUDA device, named as PyTorch names them.

use crate::{Error, Result};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Device {
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

    /// The device `SMELT_DEVICE` names (`cpu` when unset).
    pub fn from_env() -> Result<Device> {
        match std::env::var("SMELT_DEVICE") {
            Ok(s) if !s.trim().is_empty() => Device::parse(&s),
            Ok(_) | Err(_) => Ok(Device::Cpu),
        }
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
            Err(crate::ErrorKind::Value)
        );
    }
}
