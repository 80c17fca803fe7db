//! smelt: a lazy tensor compiler with PyTorch's semantics.
//!
//! Tensor ops look eager and follow PyTorch — shapes, broadcasting, type promotion, strides,
//! dim names, error messages — but they only record a graph. Reading a value compiles the
//! pending work into fused kernels (cranelift on the host, CUDA C on a GPU) and runs them.
//!
//! ```
//! use smelt::prelude::*;
//! let a = Tensor::new([[1.0f32, 2.0], [3.0, 4.0]]);
//! let b = (&a.t() + 1.0).relu();   // nothing runs yet
//! assert_eq!(b.to_vec::<f32>(), vec![2.0, 4.0, 3.0, 5.0]);
//! println!("{b}");                 // tensor([[2., 4.], …]), in PyTorch's print format
//! ```
//!
//! # Laziness and realization
//!
//! An op checks its arguments at once (a bad shape fails at the line that wrote it) and
//! records a node; nothing is computed. Values are computed when they are read —
//! [`Tensor::to_vec`], [`Tensor::item`], printing — or when asked: [`Tensor::realize`] for
//! one tensor, [`realize`] for several in one graph, so that shared work runs once and outputs
//! over the same iteration space come from one kernel. [`explain`] shows the kernels a
//! realization would run, what each fuses and why each boundary exists, without running
//! anything; [`Tensor::graph`] shows the recorded graph. Compiled plans are cached, so a
//! program repeated on new data compiles once ([`plan_cache_stats`]).
//!
//! A [`Tensor`] is a handle: `clone()` copies the handle, [`Tensor::deep_clone`] the data (as
//! PyTorch's `clone()`). Views share storage, and in-place ops (`add_`, `+=`, `setitem` …) are
//! seen through every handle on the storage, as in PyTorch.
//!
//! # Devices
//!
//! New tensors are made on the thread's default device: the host, unless `SMELT_DEVICE`
//! (`cpu`, `cuda`, `cuda:N`) says otherwise or [`set_default_device`] / [`with_default_device`]
//! change it. [`Tensor::to`] copies a tensor to a [`Device`]; an op runs where its inputs live,
//! and all of them must live on one device (a 0-dim host tensor may join a device op, as in
//! PyTorch). Without the `cuda` feature, a GPU or its libraries, CUDA calls return a `device`
//! error and everything else works.
//!
//! ```no_run
//! use smelt::prelude::*;
//! let x = Tensor::new([1.0f32, 2.0, 3.0]).to(Device::Cuda(0));
//! let y = with_default_device(Device::Cuda(0), || Tensor::ones(&[3], None));
//! println!("{}", (&x * &y).sum_all().cpu());
//! ```
//!
//! # Errors
//!
//! Every op has a `try_` form returning [`Result`]: an [`Error`] with an [`ErrorKind`]
//! (`Shape`, `Stride`, `Index`, `DType`, `Names`, `Overlap`, `Value`, `Device`, `Compile`,
//! `Unsupported`) and a message naming the op, the shapes and the rule, in PyTorch's words. The
//! plain form panics with the same message at the caller's line. Each `try_` form's doc says
//! which kinds it returns when.
//!
//! ```
//! use smelt::prelude::*;
//! let a = Tensor::zeros(&[2, 3], None);
//! let e = a.try_add(&Tensor::zeros(&[4], None)).unwrap_err();
//! assert_eq!(e.kind, ErrorKind::Shape);
//! ```
//!
//! # Finding an op
//!
//! Ops are methods of [`Tensor`] named as PyTorch names them, factories and joins associated
//! functions (`Tensor::zeros`, `Tensor::cat`); each op's doc starts with the PyTorch function
//! it is. Where PyTorch overloads one name, smelt adds a suffix: `max()` / `max_dim(dim,
//! keepdim)`, `squeeze()` / `squeeze_dim(dim)`, `split` / `split_with_sizes`, `div` /
//! `div_mode`; `torch.where` is `Tensor::r#where`, and PyTorch's `x[…]` is
//! [`Tensor::getitem`] / [`Tensor::setitem`] with [`TensorIndex`] items.
//!
//! - **Creation**: `new`, `from_vec`, `zeros`, `ones`, `full`, `empty`, `arange`, `linspace`,
//!   `eye`, `*_like`; random tensors from a seeded [`Generator`].
//! - **Elementwise**: `exp`, `log`, `sigmoid`, `relu` …; `add`, `mul`, `pow`, `maximum`,
//!   comparisons, logical and bitwise ops, with the operators `+ - * / % & | ^` and unary `-`;
//!   `where`, `clamp`, `round`, `to_dtype`.
//! - **Reductions**: `sum`, `mean`, `var`, `std`, `prod`, `amax`, `amin`, `max_dim`, `argmax`,
//!   `all`, `any`, `count_nonzero`, `logsumexp`, `softmax`, `log_softmax`, `cumsum`, `sort`.
//! - **Views and shapes**: `view`, `reshape`, `permute`, `transpose`, `t`, `expand`, `slice`,
//!   `select`, `squeeze`, `unsqueeze`, `flatten`, `split`, `chunk`, `unbind`; copies: `cat`,
//!   `stack`, `flip`, `roll`, `repeat`, `tril`, `contiguous`.
//! - **Indexing**: `getitem`, `setitem`, `index_select`, `gather`, `take`, `masked_fill`,
//!   `masked_select`, `nonzero`.
//! - **Linear algebra**: `matmul`, `mm`, `bmm`, `mv`, `dot`, `outer`, `addmm`.
//! - **In place**: `add_`, `sub_`, `mul_`, `div_`, `copy_`, `fill_`, `zero_`, `masked_fill_`,
//!   and `+=` … .
//! - **Names**: `named`, `rename`, `refine_names`, `align_to`; dims given by name ([`Dim`]).
//!
//! # Keyword arguments and short forms
//!
//! An op's full form takes PyTorch's arguments in PyTorch's order, keyword arguments included;
//! a keyword whose PyTorch default is `None` is an `Option` (`sum(dim, keepdim, dtype)`,
//! `zeros(shape, dtype)`). The common calls have short forms with the keywords at PyTorch's
//! defaults, named by a suffix saying what they fix:
//!
//! | suffix | meaning | PyTorch | smelt |
//! |---|---|---|---|
//! | `_all()` | over every dim | `x.sum()` | `x.sum_all()` |
//! | `_dim(dim)` | over `dim`, `keepdim=False` | `x.mean(1)`, `x.softmax(-1)` | `x.mean_dim(1)`, `x.softmax_dim(-1)` |
//! | `_keepdim(dim)` | over `dim`, `keepdim=True` | `x.sum(-1, keepdim=True)` | `x.sum_keepdim(-1)` |
//! | `_dtype(…, dtype)` | a factory's dtype, given | `torch.zeros(2, 3, dtype=torch.int64)` | `Tensor::zeros_dtype(&[2, 3], DType::I64)` |
//!
//! `sum`, `mean`, `var`, `std` have all three reduction forms (`var`/`std` with
//! `correction=1`); `amax`, `amin` have `_dim` and `_keepdim`; `max` and `min` have
//! `_keepdim` (values and indices); `softmax` and `log_softmax` have `_dim`; `zeros`, `ones`,
//! `full` and `arange` have `_dtype`. A `dim` is a position, a name, or a list of either
//! ([`IntoDims`]).
//!
//! ```
//! use smelt::prelude::*;
//! let x = Tensor::new([[1.0f32, 2.0], [3.0, 6.0]]);
//! assert_eq!(x.mean_dim(1).to_vec::<f32>(), [1.5, 4.5]);
//! assert_eq!(x.sum_keepdim(1).shape(), &[2, 1]);
//! assert_eq!(x.sum_all().item().as_f64(), 12.0);
//! ```
//!
//! # Dtypes
//!
//! [`DType`] follows PyTorch's (`bool`, `uint8`, `int8` … `int64`, `float16`, `bfloat16`,
//! `float32`, `float64`) and its promotion ([`result_type`]). Float scalars, integer inputs of
//! float ops and factories without a dtype use the thread's default dtype, float32 unless
//! [`set_default_dtype`] or [`with_default_dtype`] change it.

// The library's API is the frontend's, chosen in `smelt_frontend`'s `lib.rs`.
pub use smelt_frontend::*;
