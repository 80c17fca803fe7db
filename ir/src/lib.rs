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
