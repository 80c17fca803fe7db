//! The one user-facing error type: a kind (which rule was broken) and a message naming the op,
//! the shapes/dtypes/names involved and the rule, in the spirit of PyTorch's messages.

use std::fmt;

/// Which kind of rule an input broke. The conformance suite checks these kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Sizes incompatible with the op.
    Shape,
    /// A `view` impossible on these strides.
    Stride,
    /// A dim or an index out of range.
    Index,
    /// A dtype the op does not support, or an unsafe in-place cast.
    DType,
    /// Names conflict, are invalid, or the op refuses named tensors.
    Names,
    /// An in-place write to memory that several elements share.
    Overlap,
    /// An argument value outside its domain (a zero step, duplicate dims …).
    Value,
    /// A device is missing or failed.
    Device,
    /// Code generation or a JIT/NVRTC compile failed.
    Compile,
    /// An op smelt does not implement.
    Unsupported,
    /// A file could not be read or written, or its contents break its format.
    Io,
}

impl ErrorKind {
    /// The lower-case name used by the conformance files (`shape`, `dtype` …).
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Shape => "shape",
            ErrorKind::Stride => "stride",
            ErrorKind::Index => "index",
            ErrorKind::DType => "dtype",
            ErrorKind::Names => "names",
            ErrorKind::Overlap => "overlap",
            ErrorKind::Value => "value",
            ErrorKind::Device => "device",
            ErrorKind::Compile => "compile",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Io => "io",
        }
    }
}

/// `smelt::Error`: returned by every `try_` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
}

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }
    pub fn shape(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Shape, message)
    }
    pub fn stride(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Stride, message)
    }
    pub fn index(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Index, message)
    }
    pub fn dtype(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::DType, message)
    }
    pub fn names(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Names, message)
    }
    pub fn overlap(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Overlap, message)
    }
    pub fn value(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Value, message)
    }
    pub fn device(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Device, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Unsupported, message)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} error: {}", self.kind.name(), self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
