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
    /// The op does not accept the tensor's layout or representation (a sparse COO tensor given
    /// to a strided-only op, `indices()` of an uncoalesced sparse tensor; a conjugate view where
    /// only resolved values will do: `view_as_real`, `view(dtype)`).
    Layout,
    /// A device is missing or failed.
    Device,
    /// Code generation or a JIT/NVRTC compile failed.
    Compile,
    /// An op smelt does not implement.
    Unsupported,
    /// An allocation the machine cannot make (out of memory).
    Memory,
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
            ErrorKind::Layout => "layout",
            ErrorKind::Device => "device",
            ErrorKind::Compile => "compile",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Memory => "memory",
            ErrorKind::Io => "io",
        }
    }
}

/// `smelt::Error`: returned by every `try_` op.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// Which rule was broken.
    pub kind: ErrorKind,
    /// What went wrong, naming the op, the shapes, dtypes or names, and the rule.
    pub message: String,
}

impl Error {
    /// An error of `kind` saying `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
        }
    }
    /// A [`ErrorKind::Shape`] error.
    pub fn shape(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Shape, message)
    }
    /// A [`ErrorKind::Stride`] error.
    pub fn stride(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Stride, message)
    }
    /// An [`ErrorKind::Index`] error.
    pub fn index(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Index, message)
    }
    /// A [`ErrorKind::DType`] error.
    pub fn dtype(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::DType, message)
    }
    /// A [`ErrorKind::Names`] error.
    pub fn names(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Names, message)
    }
    /// An [`ErrorKind::Overlap`] error.
    pub fn overlap(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Overlap, message)
    }
    /// A [`ErrorKind::Value`] error.
    pub fn value(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Value, message)
    }
    /// A [`ErrorKind::Layout`] error.
    pub fn layout(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Layout, message)
    }
    /// A [`ErrorKind::Device`] error.
    pub fn device(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Device, message)
    }
    /// An [`ErrorKind::Memory`] error.
    pub fn memory(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Memory, message)
    }
    /// An [`ErrorKind::Unsupported`] error.
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

/// `smelt::Result`: a `Result` whose error is [`Error`] unless given.
pub type Result<T, E = Error> = std::result::Result<T, E>;
