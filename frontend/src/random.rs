//! Random tensors as lazy kernels: a [`Generator`] is a Philox key (its seed) and a counter
//! offset; a draw records an `Op::Random` node whose elements are a function of (seed, offset,
//! logical index) (`smelt_ir::random`) and advances the offset past them. A random tensor is
//! then a node like any other: it fuses into its consumers (dropout's mask is never stored) and
//! every backend, thread count and fusion gives the same bits.
//!
//! The values are not PyTorch's (PyTorch's CPU and CUDA generators differ from each other
//! too): the distributions, ranges, dtypes and errors are.

use crate::creation::check_shape;
use crate::default_dtype::get_default_dtype;
use crate::lazy::LazyNode;
use crate::tensor::{Tensor, ok};
use smelt_ir::graph::Op;
use smelt_ir::random::RandomDist;
use smelt_ir::{DType, Error, Result, Scalar, View};
use smelt_runtime::{Buffer, Device, HostBuffer};
use std::sync::Mutex;

/// PyTorch's default seed (`default_rng_seed_val`), the default generator's until
/// [`manual_seed`].
pub const DEFAULT_SEED: u64 = 67_280_421_310_721;

/// A random number generator (`torch.Generator`): the Philox key `seed` and the counter
/// `offset` its next draw starts at. Each draw of `n` elements uses counters
/// `offset .. offset + n` and advances the offset by `n`, so draws never overlap and a
/// generator restored with [`Generator::set_state`] repeats them exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    offset: u64,
}

static DEFAULT: Mutex<Generator> = Mutex::new(Generator::new(DEFAULT_SEED));

thread_local! {
    /// The generator [`with_generator`] lends this thread, if any.
    static LENT: std::cell::RefCell<Option<Generator>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with the generator the functions without an explicit one draw from: the one
/// [`with_generator`] lent this thread, else the process-wide default generator
/// (`torch.default_generator`).
pub fn with_default_generator<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut f = Some(f);
    let lent = LENT.with(|l| {
        let mut l = l.borrow_mut();
        l.as_mut().map(|g| (f.take().expect("called once"))(g))
    });
    match (lent, f) {
        (Some(r), _) => r,
        (None, Some(f)) => {
            let mut g = DEFAULT.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut g)
        }
        (None, None) => unreachable!("f runs in exactly one branch"),
    }
}

/// Runs `body` with `g` standing in for the default generator on this thread (the
/// `generator=` argument of PyTorch's samplers, for a whole block: `rand`, `dropout`,
/// `uniform_`… inside draw from `g`, which advances). Other threads keep the default.
///
/// ```
/// # use smelt_frontend as smelt;
/// use smelt::prelude::*;
/// let mut g = Generator::new(7);
/// let a = smelt::with_generator(&mut g, || Tensor::rand(&[3], None));
/// assert_eq!(a.to_vec::<f32>(), Generator::new(7).rand(&[3], None).to_vec::<f32>());
/// assert_eq!(g.offset(), 3);
/// ```
pub fn with_generator<R>(g: &mut Generator, body: impl FnOnce() -> R) -> R {
    /// Hands the lent generator back to its owner however `body` ends.
    struct Return<'a> {
        owner: &'a mut Generator,
        before: Option<Generator>,
    }
    impl Drop for Return<'_> {
        fn drop(&mut self) {
            let lent = LENT.with(|l| std::mem::replace(&mut *l.borrow_mut(), self.before.take()));
            if let Some(lent) = lent {
                *self.owner = lent;
            }
        }
    }
    let before = LENT.with(|l| l.borrow_mut().replace(g.clone()));
    let _return = Return { owner: g, before };
    body()
}

/// `torch.manual_seed(seed)`: reseeds the default generator (offset 0).
pub fn manual_seed(seed: u64) {
    with_default_generator(|g| {
        g.manual_seed(seed);
    });
}

/// `torch.initial_seed()`: the default generator's seed.
pub fn initial_seed() -> u64 {
    with_default_generator(|g| g.initial_seed())
}

/// `torch.seed()`: reseeds the default generator from the operating system's entropy (through
/// the standard library's randomly keyed hasher) and returns the seed.
pub fn seed() -> u64 {
    with_default_generator(|g| g.seed())
}

/// `torch.get_rng_state()`: the default generator's state ([`Generator::get_state`]).
#[track_caller]
pub fn get_rng_state() -> Tensor {
    with_default_generator(|g| g.get_state())
}

/// `torch.set_rng_state(state)`: restores the default generator ([`Generator::set_state`]).
pub fn try_set_rng_state(state: &Tensor) -> Result<()> {
    let restored = Generator::from_state(state)?;
    with_default_generator(|g| *g = restored);
    Ok(())
}

/// [`try_set_rng_state`]; panics on a malformed state.
#[track_caller]
pub fn set_rng_state(state: &Tensor) {
    ok(try_set_rng_state(state))
}

/// The generator's state as a tensor: 16 bytes, the seed then the offset, little-endian (the
/// layout of PyTorch's CUDA Philox generator state).
fn state_bytes(seed: u64, offset: u64) -> Vec<u8> {
    let mut b = seed.to_le_bytes().to_vec();
    b.extend(offset.to_le_bytes());
    b
}

impl Generator {
    /// A generator with key `seed`, at offset 0 (`torch.Generator().manual_seed(seed)`).
    pub const fn new(seed: u64) -> Generator {
        Generator { seed, offset: 0 }
    }

    /// `manual_seed(seed)`: the key becomes `seed` and the offset 0.
    pub fn manual_seed(&mut self, seed: u64) -> &mut Generator {
        *self = Generator::new(seed);
        self
    }

    /// `initial_seed()`: the key.
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// `seed()`: reseeds from the operating system's entropy and returns the new seed.
    pub fn seed(&mut self) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(self.seed ^ self.offset);
        // PyTorch keeps seeds below 2^63 (they round-trip through int64).
        let seed = h.finish() >> 1;
        self.manual_seed(seed);
        seed
    }

    /// The counter offset the next draw starts at.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// `get_state()`: a uint8 tensor of 16 bytes on the cpu, the seed then the offset
    /// (little-endian).
    #[track_caller]
    pub fn get_state(&self) -> Tensor {
        let bytes = state_bytes(self.seed, self.offset);
        let bytes: Vec<Scalar> = bytes
            .into_iter()
            .map(|b| Scalar::Int(i64::from(b)))
            .collect();
        ok(Tensor::try_from_buffer_on(
            HostBuffer::from_scalars(DType::U8, &bytes),
            DType::U8,
            View::contiguous(&[16]),
            Device::Cpu,
        ))
    }

    /// `set_state(state)`: restores a state [`Generator::get_state`] returned. Errors: a
    /// `dtype` error unless `state` is uint8, a `shape` error unless it has 16 elements.
    pub fn try_set_state(&mut self, state: &Tensor) -> Result<&mut Generator> {
        *self = Generator::from_state(state)?;
        Ok(self)
    }

    /// [`Generator::try_set_state`]; panics on a malformed state.
    #[track_caller]
    pub fn set_state(&mut self, state: &Tensor) -> &mut Generator {
        ok(self.try_set_state(state))
    }

    fn from_state(state: &Tensor) -> Result<Generator> {
        if state.dtype() != DType::U8 {
            return Err(Error::dtype(format!(
                "set_state: RNG state must be a torch.ByteTensor (uint8), got {}",
                state.dtype()
            )));
        }
        if state.numel() != 16 {
            return Err(Error::shape(format!(
                "set_state: RNG state is wrong size: expected 16 bytes (seed, offset), got {}",
                state.numel()
            )));
        }
        let bytes: Vec<u8> = state
            .try_to_scalars()?
            .iter()
            .map(|s| s.as_i64() as u8)
            .collect();
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(Generator {
            seed: word(0),
            offset: word(8),
        })
    }

    /// Reserves `n` counters: the draw's `(seed, offset)`.
    fn advance(&mut self, n: usize) -> (u64, u64) {
        let at = self.offset;
        self.offset = self.offset.wrapping_add(n as u64);
        (self.seed, at)
    }

    /// A lazy contiguous tensor of `shape` and `dtype` on `device` drawn from `dist`.
    #[track_caller]
    fn draw(
        &mut self,
        dist: RandomDist,
        shape: &[usize],
        dtype: DType,
        device: Device,
    ) -> Result<Tensor> {
        draw_with(&mut |n| self.advance(n), dist, shape, dtype, device)
    }

    /// `torch.rand(size, generator=self)`: uniform on [0, 1) with the dtype's mantissa (the
    /// default dtype without one), on the default device.
    #[track_caller]
    pub fn try_rand(&mut self, shape: &[usize], dtype: Option<DType>) -> Result<Tensor> {
        let dtype = float_dtype("rand", dtype)?;
        self.draw(RandomDist::Uniform, shape, dtype, default_device())
    }

    /// [`Generator::try_rand`]; panics where it returns an error.
    #[track_caller]
    pub fn rand(&mut self, shape: &[usize], dtype: Option<DType>) -> Tensor {
        ok(self.try_rand(shape, dtype))
    }

    /// `torch.randn(size, generator=self)`: standard normal (Box–Muller on a pair of 53-bit
    /// uniforms per element).
    #[track_caller]
    pub fn try_randn(&mut self, shape: &[usize], dtype: Option<DType>) -> Result<Tensor> {
        let dtype = float_dtype("randn", dtype)?;
        self.draw(RandomDist::Normal, shape, dtype, default_device())
    }

    /// [`Generator::try_randn`]; panics where it returns an error.
    #[track_caller]
    pub fn randn(&mut self, shape: &[usize], dtype: Option<DType>) -> Tensor {
        ok(self.try_randn(shape, dtype))
    }

    /// `torch.randint(low, high, size, generator=self)`: int64 uniform on [low, high).
    /// Errors: a `value` error unless `low < high`.
    #[track_caller]
    pub fn try_randint(&mut self, low: i64, high: i64, shape: &[usize]) -> Result<Tensor> {
        randint_with(
            &mut |n| self.advance(n),
            "randint",
            low,
            high,
            shape,
            DType::I64,
            default_device(),
        )
    }

    /// [`Generator::try_randint`]; panics where it returns an error.
    #[track_caller]
    pub fn randint(&mut self, low: i64, high: i64, shape: &[usize]) -> Tensor {
        ok(self.try_randint(low, high, shape))
    }

    /// `torch.randperm(n, generator=self)`: a random permutation of 0..n as int64 (the order
    /// that sorts n random 63-bit keys, a library sort). Errors: a `value` error for a
    /// negative `n`.
    #[track_caller]
    pub fn try_randperm(&mut self, n: i64) -> Result<Tensor> {
        randperm_with(&mut |k| self.advance(k), n)
    }

    /// [`Generator::try_randperm`]; panics where it returns an error.
    #[track_caller]
    pub fn randperm(&mut self, n: i64) -> Tensor {
        ok(self.try_randperm(n))
    }
}

fn default_device() -> Device {
    crate::device::get_default_device()
}

/// Reserves a draw's counters: `n` elements → `(seed, offset)` (from a generator the caller
/// holds, or [`from_default`]). The draws themselves are recorded outside it, so that every node
/// names the user's line (`#[track_caller]` does not pass through closures).
type Reserve<'a> = &'a mut dyn FnMut(usize) -> (u64, u64);

/// Reserves counters from the default generator.
fn from_default(n: usize) -> (u64, u64) {
    with_default_generator(|g| g.advance(n))
}

/// A lazy contiguous tensor of `shape` and `dtype` on `device` drawn from `dist`, its counters
/// reserved by `reserve`: an `Op::Random` node reading its (seed, offset) as a 16-byte state
/// buffer on the device.
#[track_caller]
fn draw_with(
    reserve: Reserve,
    dist: RandomDist,
    shape: &[usize],
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    debug_assert!(
        dist.draws(dtype),
        "invariant: callers pick a drawable dtype"
    );
    smelt_ir::view::check_sizes(shape, dtype.size())?;
    let numel: usize = shape.iter().product();
    let (seed, offset) = reserve(numel);
    let state = HostBuffer::from_scalars(
        DType::I64,
        &[Scalar::Int(seed as i64), Scalar::Int(offset as i64)],
    );
    let state = Buffer::from(state).to_device(device)?;
    let state = LazyNode::realized(state, DType::I64, View::contiguous(&[2]));
    Ok(Tensor::from_node(LazyNode::pending_on(
        device,
        Op::Random { dist },
        dtype,
        numel,
        View::contiguous(shape),
        vec![(state, View::contiguous(&[2]))],
    )))
}

/// Integers uniform on [low, high) as `dtype`: 63 random bits modulo the span (a bias below
/// span / 2^63). Errors: a `value` error unless `low < high` (nothing is reserved then).
#[track_caller]
fn randint_with(
    reserve: Reserve,
    op: &str,
    low: i64,
    high: i64,
    shape: &[usize],
    dtype: DType,
    device: Device,
) -> Result<Tensor> {
    if low >= high {
        return Err(Error::value(format!(
            "{op}: random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )));
    }
    let span = i128::from(high) - i128::from(low);
    let bits = draw_with(reserve, RandomDist::Bits, shape, DType::I64, device)?;
    // A span of 2^63 or more (the whole int64 range from `low`, wrapping) takes the bits as
    // they are.
    let values = if span >= 1 << 63 {
        bits.try_add(Scalar::Int(low))?
    } else {
        bits.try_remainder(Scalar::Int(span as i64))?
            .try_add(Scalar::Int(low))?
    };
    values.try_to_dtype(dtype, false)
}

/// A random permutation of 0..n as int64: the order that sorts n random 63-bit keys (a library
/// sort, stable, so equal keys keep their order). Errors: a `value` error for a negative `n`.
#[track_caller]
fn randperm_with(reserve: Reserve, n: i64) -> Result<Tensor> {
    if n < 0 {
        return Err(Error::value(format!(
            "randperm: n must be non-negative, got {n}"
        )));
    }
    let keys = draw_with(
        reserve,
        RandomDist::Bits,
        &[n as usize],
        DType::I64,
        default_device(),
    )?;
    Ok(keys.try_sort(0, false)?.1)
}

/// `dtype` (the default dtype without one), which must be a float for `op`.
fn float_dtype(op: &str, dtype: Option<DType>) -> Result<DType> {
    let dtype = dtype.unwrap_or_else(get_default_dtype);
    if dtype.is_float() {
        Ok(dtype)
    } else {
        Err(Error::dtype(format!(
            "{op}: \"{op}\" not implemented for '{}': it draws floating point values",
            dtype
        )))
    }
}

fn shape_of(op: &str, shape: &[i64]) -> Result<Vec<usize>> {
    check_shape(shape, op)
}

/// The free functions: `torch.rand(size)` and friends, drawing from the default generator on
/// the default device.
impl Tensor {
    /// `torch.rand(size, dtype=dtype)`: uniform on [0, 1) from the default generator.
    /// Errors: a `value` error for a negative size, a `dtype` error for a non-float dtype.
    #[track_caller]
    pub fn try_rand(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        let shape = shape_of("rand", shape)?;
        let dtype = float_dtype("rand", dtype)?;
        draw_with(
            &mut from_default,
            RandomDist::Uniform,
            &shape,
            dtype,
            default_device(),
        )
    }

    /// [`Tensor::try_rand`]; panics where it returns an error.
    #[track_caller]
    pub fn rand(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_rand(shape, dtype))
    }

    /// `torch.randn(size, dtype=dtype)`: standard normal from the default generator.
    #[track_caller]
    pub fn try_randn(shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        let shape = shape_of("randn", shape)?;
        let dtype = float_dtype("randn", dtype)?;
        draw_with(
            &mut from_default,
            RandomDist::Normal,
            &shape,
            dtype,
            default_device(),
        )
    }

    /// [`Tensor::try_randn`]; panics where it returns an error.
    #[track_caller]
    pub fn randn(shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_randn(shape, dtype))
    }

    /// `torch.randint(low, high, size, dtype=dtype)`: uniform integers on [low, high) (int64
    /// without a dtype; a float dtype holds the integers). Errors: a `value` error unless
    /// `low < high` or for a negative size; a `dtype` error for bool.
    #[track_caller]
    pub fn try_randint(low: i64, high: i64, shape: &[i64], dtype: Option<DType>) -> Result<Tensor> {
        let shape = shape_of("randint", shape)?;
        let dtype = int_dtype("randint", dtype.unwrap_or(DType::I64))?;
        randint_with(
            &mut from_default,
            "randint",
            low,
            high,
            &shape,
            dtype,
            default_device(),
        )
    }

    /// [`Tensor::try_randint`]; panics where it returns an error.
    #[track_caller]
    pub fn randint(low: i64, high: i64, shape: &[i64], dtype: Option<DType>) -> Tensor {
        ok(Tensor::try_randint(low, high, shape, dtype))
    }

    /// `torch.randperm(n)`: a random permutation of 0..n (int64) from the default generator.
    #[track_caller]
    pub fn try_randperm(n: i64) -> Result<Tensor> {
        randperm_with(&mut from_default, n)
    }

    /// [`Tensor::try_randperm`]; panics where it returns an error.
    #[track_caller]
    pub fn randperm(n: i64) -> Tensor {
        ok(Tensor::try_randperm(n))
    }

    /// `torch.rand_like(self, dtype=dtype)`: uniform on [0, 1) with self's shape, names and
    /// device (contiguous), of self's dtype without one. Errors: a `dtype` error for a
    /// non-float dtype.
    #[track_caller]
    pub fn try_rand_like(&self, dtype: Option<DType>) -> Result<Tensor> {
        self.float_draw_like("rand_like", RandomDist::Uniform, dtype)
    }

    /// [`Tensor::try_rand_like`]; panics where it returns an error.
    #[track_caller]
    pub fn rand_like(&self, dtype: Option<DType>) -> Tensor {
        ok(self.try_rand_like(dtype))
    }

    /// `torch.randn_like(self, dtype=dtype)`: standard normal with self's shape, names and
    /// device.
    #[track_caller]
    pub fn try_randn_like(&self, dtype: Option<DType>) -> Result<Tensor> {
        self.float_draw_like("randn_like", RandomDist::Normal, dtype)
    }

    /// [`Tensor::try_randn_like`]; panics where it returns an error.
    #[track_caller]
    pub fn randn_like(&self, dtype: Option<DType>) -> Tensor {
        ok(self.try_randn_like(dtype))
    }

    /// `rand_like`/`randn_like`: a float draw of `dist` with self's shape, names and device,
    /// of self's dtype without one.
    #[track_caller]
    fn float_draw_like(&self, op: &str, dist: RandomDist, dtype: Option<DType>) -> Result<Tensor> {
        crate::sparse::refuse_sparse(op, [self])?;
        let dtype = float_dtype(op, Some(dtype.unwrap_or(self.dtype())))?;
        let t = draw_with(&mut from_default, dist, self.shape(), dtype, self.device())?;
        Ok(t.with_dim_names(self.dim_names()))
    }

    /// `torch.randint_like(self, low, high, dtype=dtype)`: integers on [low, high) with self's
    /// shape and device, of self's dtype without one. Errors (besides the range and dtype
    /// checks): a `names` error for a named self (PyTorch 2.11 refuses `randint_like.low_dtype`
    /// on names).
    #[track_caller]
    pub fn try_randint_like(&self, low: i64, high: i64, dtype: Option<DType>) -> Result<Tensor> {
        crate::sparse::refuse_sparse("randint_like", [self])?;
        crate::names::refuse_named("randint_like.low_dtype", [self])?;
        let dtype = int_dtype("randint_like", dtype.unwrap_or(self.dtype()))?;
        let t = randint_with(
            &mut from_default,
            "randint_like",
            low,
            high,
            self.shape(),
            dtype,
            self.device(),
        )?;
        Ok(t)
    }

    /// [`Tensor::try_randint_like`]; panics where it returns an error.
    #[track_caller]
    pub fn randint_like(&self, low: i64, high: i64, dtype: Option<DType>) -> Tensor {
        ok(self.try_randint_like(low, high, dtype))
    }
}

/// A dtype `randint` can fill: any but bool and the complex ones.
fn int_dtype(op: &str, dtype: DType) -> Result<DType> {
    if dtype == DType::Bool || dtype.is_complex() {
        Err(Error::dtype(format!(
            "{op}: \"{op}\" not implemented for '{}'",
            dtype.torch_name()
        )))
    } else {
        Ok(dtype)
    }
}

/// The largest integer `dtype` holds exactly and every integer below it does too: its max
/// for an integer dtype, 2^digits for a float (PyTorch's `random_()` upper bound).
fn exact_top(dtype: DType) -> i128 {
    match dtype {
        DType::Bool => 1,
        DType::U8 => 255,
        DType::I8 => 127,
        DType::I16 => i128::from(i16::MAX),
        DType::I32 => i128::from(i32::MAX),
        DType::I64 => i128::from(i64::MAX),
        DType::F16 => 1 << 11,
        DType::BF16 => 1 << 8,
        DType::F32 | DType::C64 => 1 << 24,
        DType::F64 | DType::C128 => 1 << 53,
    }
}

/// The smallest value of an integer dtype (0 for bool and unsigned; floats: −2^digits).
fn exact_bottom(dtype: DType) -> i128 {
    match dtype {
        DType::Bool | DType::U8 => 0,
        DType::I8 => -128,
        DType::I16 => i128::from(i16::MIN),
        DType::I32 => i128::from(i32::MIN),
        DType::I64 => i128::from(i64::MIN),
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 | DType::C64 | DType::C128 => {
            -exact_top(dtype)
        }
    }
}

/// How an in-place sampler maps its draw `d`: `d * scale + shift`, or `d / divisor`.
#[derive(Clone, Copy, Debug)]
enum Finish {
    MulAdd(f64, f64),
    Div(f64),
}

/// The in-place sampling methods (`Tensor.uniform_` and friends): each draws a fresh tensor of
/// self's shape and dtype on self's device and writes it through self's view, as `copy_`
/// does, so a view's base sees the values.
impl Tensor {
    /// A draw of `dist` in self's dtype (which must be a float), mapped by `finish` and written
    /// into self. (`finish` is data, not a closure: `#[track_caller]` does not pass through
    /// closures, and its nodes must name the user's line.)
    #[track_caller]
    fn fill_random(&self, op: &str, dist: RandomDist, finish: Finish) -> Result<&Tensor> {
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "{op}: \"{op}\" not implemented for '{dtype}': it fills floating point tensors"
            )));
        }
        let drawn = draw_with(&mut from_default, dist, self.shape(), dtype, self.device())?;
        let value = match finish {
            Finish::MulAdd(scale, shift) => drawn.try_mul(scale)?.try_add(shift)?,
            Finish::Div(divisor) => drawn.try_div(divisor)?,
        };
        self.try_copy_(&value)
    }

    /// `uniform_(from, to)`: fills self with values uniform on [from, to) (`from + (to −
    /// from)·u`, computed in self's dtype). Errors: a `value` error when `from > to` or the
    /// range is not finite, a `dtype` error for a non-float tensor.
    #[track_caller]
    pub fn try_uniform_(&self, from: f64, to: f64) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("uniform_", [self])?;
        if from > to || !(to - from).is_finite() {
            return Err(Error::value(format!(
                "uniform_: expects to return a [from, to) range, but found from={from} > to={to}"
            )));
        }
        self.fill_random(
            "uniform_",
            RandomDist::Uniform,
            Finish::MulAdd(to - from, from),
        )
    }

    /// [`Tensor::try_uniform_`]; panics where it returns an error.
    #[track_caller]
    pub fn uniform_(&self, from: f64, to: f64) -> &Tensor {
        ok(self.try_uniform_(from, to))
    }

    /// `normal_(mean, std)`: fills self with values from N(mean, std²). Errors: a `value`
    /// error for a negative `std`, a `dtype` error for a non-float tensor.
    #[track_caller]
    pub fn try_normal_(&self, mean: f64, std: f64) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("normal_", [self])?;
        if std.is_nan() || std < 0.0 {
            return Err(Error::value(format!(
                "normal_: normal expects std >= 0.0, but found std {std}"
            )));
        }
        self.fill_random("normal_", RandomDist::Normal, Finish::MulAdd(std, mean))
    }

    /// [`Tensor::try_normal_`]; panics where it returns an error.
    #[track_caller]
    pub fn normal_(&self, mean: f64, std: f64) -> &Tensor {
        ok(self.try_normal_(mean, std))
    }

    /// `exponential_(lambd)`: fills self with values from Exp(λ) (density λe^(−λx)). Errors:
    /// a `value` error unless `lambd > 0`, a `dtype` error for a non-float tensor.
    #[track_caller]
    pub fn try_exponential_(&self, lambd: f64) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("exponential_", [self])?;
        if lambd.is_nan() || lambd <= 0.0 {
            return Err(Error::value(format!(
                "exponential_: exponential_ expects lambda > 0.0, but found lambda={lambd}"
            )));
        }
        self.fill_random("exponential_", RandomDist::Exponential, Finish::Div(lambd))
    }

    /// [`Tensor::try_exponential_`]; panics where it returns an error.
    #[track_caller]
    pub fn exponential_(&self, lambd: f64) -> &Tensor {
        ok(self.try_exponential_(lambd))
    }

    /// `bernoulli_(p)`: fills self (any dtype) with 1 with probability `p`, else 0. Errors: a
    /// `value` error unless 0 ≤ p ≤ 1.
    #[track_caller]
    pub fn try_bernoulli_(&self, p: f64) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("bernoulli_", [self])?;
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::value(format!(
                "bernoulli_: bernoulli_ expects p to be in [0, 1], but got p={p}"
            )));
        }
        // u < p with u on [0, 1) of f64's 53 bits: exactly p's probability for p = 0 and 1.
        let u = draw_with(
            &mut from_default,
            RandomDist::Uniform,
            self.shape(),
            DType::F64,
            self.device(),
        )?;
        self.try_copy_(&u.try_lt(p)?)
    }

    /// [`Tensor::try_bernoulli_`]; panics where it returns an error.
    #[track_caller]
    pub fn bernoulli_(&self, p: f64) -> &Tensor {
        ok(self.try_bernoulli_(p))
    }

    /// `torch.bernoulli(self)`: self holds probabilities (a float tensor); each element of the
    /// result (self's dtype, shape and device) is 1 with its probability, else 0. A probability
    /// outside [0, 1] acts as the nearer end (PyTorch checks the values, which a lazy op
    /// cannot without a sync). Errors: a `dtype` error for a non-float tensor.
    #[track_caller]
    pub fn try_bernoulli(&self) -> Result<Tensor> {
        crate::sparse::refuse_sparse("bernoulli", [self])?;
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "bernoulli: \"bernoulli\" not implemented for '{dtype}': probabilities are floats"
            )));
        }
        let u = draw_with(
            &mut from_default,
            RandomDist::Uniform,
            self.shape(),
            DType::F64,
            self.device(),
        )?;
        let p = self.try_to_dtype(DType::F64, false)?;
        Ok(u.try_lt(&p)?
            .try_to_dtype(dtype, false)?
            .with_dim_names(self.dim_names()))
    }

    /// [`Tensor::try_bernoulli`]; panics where it returns an error.
    #[track_caller]
    pub fn bernoulli(&self) -> Tensor {
        ok(self.try_bernoulli())
    }

    /// `random_(from, to)`: fills self with integers uniform on [from, to); without `to`, on
    /// [from, top] where top is the dtype's largest value (2^mantissa digits for a float,
    /// as PyTorch). Errors: a `value` error unless `from < to` and both ends fit self's dtype.
    #[track_caller]
    pub fn try_random_(&self, from: i64, to: Option<i64>) -> Result<&Tensor> {
        crate::sparse::refuse_sparse("random_", [self])?;
        let dtype = self.dtype();
        let to = match to {
            Some(to) => i128::from(to),
            None => exact_top(dtype) + 1,
        };
        let from = i128::from(from);
        if from >= to {
            return Err(Error::value(format!(
                "random_: random_ expects 'from' to be less than 'to', but got from={from} >= to={to}"
            )));
        }
        if from < exact_bottom(dtype) || to - 1 > exact_top(dtype) {
            return Err(Error::value(format!(
                "random_: [from, to) = [{from}, {to}) does not fit {dtype}, whose values run \
                 from {} to {}",
                exact_bottom(dtype),
                exact_top(dtype)
            )));
        }
        let span = to - from;
        let bits = draw_with(
            &mut from_default,
            RandomDist::Bits,
            self.shape(),
            DType::I64,
            self.device(),
        )?;
        // from + bits mod span, in wrapping int64 arithmetic (span up to 2^64 only for the
        // whole int64 range, where the bits plus i64::MIN cover only half: a documented bias
        // PyTorch avoids with a full 64-bit draw).
        let values = if span >= 1 << 63 {
            bits.try_add(Scalar::Int(from as i64))?
        } else {
            bits.try_remainder(Scalar::Int(span as i64))?
                .try_add(Scalar::Int(from as i64))?
        };
        self.try_copy_(&values)
    }

    /// [`Tensor::try_random_`]; panics where it returns an error.
    #[track_caller]
    pub fn random_(&self, from: i64, to: Option<i64>) -> &Tensor {
        ok(self.try_random_(from, to))
    }

    /// `torch.nn.functional.dropout(self, p, training)`: in training, each element is zeroed
    /// with probability `p` and the rest scaled by 1/(1 − p) (`self · noise`, noise =
    /// bernoulli(1 − p) / (1 − p) in self's dtype); one fused kernel that never stores the
    /// mask. Out of training, self itself. Errors: a `value` error unless 0 ≤ p ≤ 1, a `dtype`
    /// error for a non-float tensor.
    #[track_caller]
    pub fn try_dropout(&self, p: f64, training: bool) -> Result<Tensor> {
        crate::sparse::refuse_sparse("dropout", [self])?;
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::value(format!(
                "dropout: dropout probability has to be between 0 and 1, but got {p}"
            )));
        }
        let dtype = self.dtype();
        if !dtype.is_float() {
            return Err(Error::dtype(format!(
                "dropout: \"dropout\" not implemented for '{dtype}': it scales floating point values"
            )));
        }
        if !training || p == 0.0 {
            return Ok(self.clone());
        }
        if p == 1.0 {
            return self.try_mul(0.0);
        }
        let keep = 1.0 - p;
        let u = draw_with(
            &mut from_default,
            RandomDist::Uniform,
            self.shape(),
            dtype,
            self.device(),
        )?;
        let noise = u.try_lt(keep)?.try_to_dtype(dtype, false)?.try_div(keep)?;
        self.try_mul(&noise)
    }

    /// [`Tensor::try_dropout`]; panics where it returns an error.
    #[track_caller]
    pub fn dropout(&self, p: f64, training: bool) -> Tensor {
        ok(self.try_dropout(p, training))
    }
}
