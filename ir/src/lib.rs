//! smelt's intermediate representations: element types and promotion, the view algebra, the
//! graph IR the frontend builds, the kernel IR codegen consumes, and the lowering between them.

pub mod affine;
pub mod complex;
pub mod dims;
pub mod dtype;
pub mod error;
pub mod fused;
pub mod graph;
pub mod kernel;
pub mod lower;
pub mod op;
pub mod random;
pub mod reading;
pub mod row_program;
pub mod scalar;
pub mod scalar_ops;
pub mod schedule;
pub mod split;
pub mod view;

pub use dims::Dims;
pub use dtype::{Category, DType, REAL_KERNELS, promote_types};
pub use error::{Error, ErrorKind, Result};
pub use graph::{Boundary, Edge, Graph, Group, Node, NodeId, Op};
pub use kernel::{Access, Arg, Index, Instr, Kernel, Level, LibraryCall, ValueId, Work};
pub use op::{BinaryOp, LibraryOp, OnBool, OnInt, ReduceOp, UnaryOp};
pub use reading::{Part, Parts, Reading};
pub use row_program::RowPass;
pub use scalar::Scalar;
pub use schedule::{Schedule, Step};
pub use view::{MemoryFormat, View};

/// Whether `SMELT_DUMP` (read at each call) names `what`: the one reading of the variable
/// that the passes, the frontend, the JIT and the backends share ([`dump_names`]).
pub fn dump_requested(what: &str) -> bool {
    std::env::var("SMELT_DUMP").is_ok_and(|list| dump_names(&list, what))
}

/// Whether `list`, a value of `SMELT_DUMP` (comma-separated names), names `what`; for a caller
/// that reads the variable once and asks several times.
pub fn dump_names(list: &str, what: &str) -> bool {
    list.split(',').any(|w| w.trim() == what)
}
