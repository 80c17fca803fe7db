//! The row program of a reduction kernel: row-level instructions, one pass over the reduced
//! dims per reduction (scalar or f32x4 with f64 sum lanes in a fixed order), the stash, and
//! the final pass of element-level stores.

use super::*;

/// A value that a row's last reduction pass computes and its final store pass needs again
/// (softmax's `exp(x - max)`): the reduction pass also writes it to the output at the very
/// place the store pass will write, and the store pass reads it back from there (the row is in
/// cache) instead of recomputing it. An output of another dtype than the value (a bfloat16
/// softmax computes in f32 and rounds once at the store) cannot hold it: the value then waits
/// in a scratch row of each call's own, as in a streaming variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stash {
    /// The stashed value, the reduction in whose pass it is written, and the final store
    /// (instruction and output argument) whose place holds it meanwhile.
    pub value: usize,
    pub reduce: usize,
    pub store: usize,
    pub arg: usize,
    /// The value's dtype (f32 or f64).
    pub dtype: DType,
    /// Whether it always waits in the scratch row (the output holds f16 or bf16).
    pub in_scratch: bool,
}

/// The stash of a kernel, if it has one: one reduced dim; exactly one element-level store,
/// to a fresh output whose index moves along the reduced dim (so the points of a row have
/// distinct places; outputs are dense, so rows do too), either f32/f64 of the value's dtype
/// or f16/bf16 of an f32 value (held in the scratch row); and a value computed from a
/// transcendental that both the last reduction and that store depend on (the latest such).
/// Everything it looks at is part of the structure key.
pub(crate) fn stash_plan(k: &Kernel) -> Option<Stash> {
    if k.reduce_axes != 1 {
        return None;
    }
    let levels = k.levels();
    let types = k.value_dtypes();
    let reduce = *k.reduces().last()?;
    let stores = k.element_stores(&levels);
    let [store] = stores[..] else { return None };
    let Instr::Store { arg, index, .. } = &k.body[store] else {
        return None;
    };
    let out = &k.args[*arg];
    let (dtype, in_scratch) = if matches!(out.dtype, DType::F32 | DType::F64) {
        (out.dtype, false)
    } else if matches!(out.dtype, DType::F16 | DType::BF16) {
        (DType::F32, true)
    } else {
        return None;
    };
    if out.access != Access::Write || index.strides.last() == Some(&0) {
        return None;
    }
    // Element-level ancestors (and self) of an instruction.
    let cone = |root: usize| k.element_cone(&levels, &[root], &[]);
    let Instr::Reduce { x, .. } = k.body[reduce] else {
        return None;
    };
    let (of_reduce, of_store) = (cone(x), cone(store));
    let value = (0..reduce).rev().find(|&v| {
        of_reduce[v]
            && of_store[v]
            && types[v] == Some(dtype)
            && cone(v)
                .iter()
                .enumerate()
                .any(|(i, &inside)| inside && super::super::is_transcendental(&k.body[i]))
    })?;
    Some(Stash {
        value,
        reduce,
        store,
        arg: *arg,
        dtype,
        in_scratch,
    })
}

/// A value of a row's first reduction pass that a later pass would compute again through
/// half-precision arithmetic (a bfloat16 attention's scaled, rounded and masked scores, read
/// by softmax's max pass and again by its sum pass; a residual layernorm's rounded bf16 sum,
/// read by its mean and its variance): the first pass also writes it, in f32, to a scratch row
/// of each call's own, and the later passes read it back instead of recomputing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reread {
    /// The value (f32) and the first reduction, in whose pass it is written.
    pub value: usize,
    pub reduce: usize,
}

/// The [`Reread`] of a kernel, if it has one: one reduced dim, two reductions or more, and an
/// f32 value of the first reduction's element-level cone that a later pass needs (a later
/// reduction, or the final stores but for what the [`Stash`] brings back) and whose own cone
/// rounds to f16 or bf16 (an op computed in half precision); the latest such. A value only
/// loaded and widened costs less to load again than to keep. Part of the structure key.
pub(crate) fn reread_plan(k: &Kernel) -> Option<Reread> {
    if k.reduce_axes != 1 {
        return None;
    }
    let reduces = k.reduces();
    let [first, ref later @ ..] = reduces[..] else {
        return None;
    };
    if later.is_empty() {
        return None;
    }
    let levels = k.levels();
    let types = k.value_dtypes();
    let operand = |r: usize| {
        let Instr::Reduce { x, .. } = k.body[r] else {
            unreachable!("reduces() lists Reduce instructions")
        };
        x
    };
    let of_first = k.element_cone(&levels, &[operand(first)], &[]);
    let mut needed_later = vec![false; k.body.len()];
    let mut need = |cone: Vec<bool>| {
        for (n, c) in needed_later.iter_mut().zip(cone) {
            *n |= c;
        }
    };
    for &r in later {
        need(k.element_cone(&levels, &[operand(r)], &[]));
    }
    let stores = k.element_stores(&levels);
    let stashed: Vec<usize> = stash_plan(k).map(|st| st.value).into_iter().collect();
    need(k.element_cone(&levels, &stores, &stashed));
    let rounds = |i: usize| {
        matches!(k.body[i], Instr::Unary { .. } | Instr::Binary { .. })
            && matches!(types[i], Some(DType::F16 | DType::BF16))
    };
    let idioms = super::idioms::idioms(k);
    let value = (0..first).rev().find(|&v| {
        of_first[v]
            && needed_later[v]
            && types[v] == Some(DType::F32)
            && idioms[v] == super::idioms::Idiom::Plain
            && k.element_cone(&levels, &[v], &[])
                .iter()
                .enumerate()
                .any(|(i, &inside)| inside && rounds(i))
    })?;
    Some(Reread {
        value,
        reduce: first,
    })
}

impl<'a, 'f> Translator<'a, 'f> {
    /// The program for one kept point: row-level instructions, one pass over the reduced dims
    /// per reduction, a final pass for element-level stores.
    pub(super) fn row(&mut self, point: &mut Vec<Value>, vals: &mut [Option<Value>]) -> Result<()> {
        let n = self.k.body.len();
        let kept = self.k.shape.len() - self.k.reduce_axes;
        let reducing = self.k.reduce_axes > 0;
        let touches = self.next_row_touches(point, kept);
        if reducing {
            self.set_bases(point, kept);
        }
        // The row program (`Kernel::passes`): each pass's row-level instructions, then its
        // walk over the row, restricted to the element-level instructions it needs.
        for (i, pass) in self.k.passes().into_iter().enumerate() {
            self.eval(pass.row.clone(), Level::Row, point, vals)?;
            if reducing {
                self.pin_row_values(pass.row.clone(), vals);
            }
            let Some(r) = pass.reduce else {
                if pass.elements.is_empty() {
                    continue;
                }
                // The final pass: a stashed value is read back, not recomputed, so what only
                // it needs is left out.
                self.skip = self.stash.map(|st| st.value);
                let stores = self.k.element_stores(&self.levels);
                let stops: Vec<usize> = self.skip.into_iter().chain(self.reread_value()).collect();
                self.live = Some(self.k.element_cone(&self.levels, &stores, &stops));
                self.reread_here();
                let mut scalar = |t: &mut Self, point: &mut Vec<Value>| {
                    let mut v = vals.to_vec();
                    t.stash_load(point, &mut v);
                    t.reread_load(point, &mut v);
                    t.eval(0..n, Level::Element, point, &mut v)
                };
                if self.row_simd {
                    let splat = self.splat_row_values(vals);
                    self.touches = touches.clone();
                    self.inner_vector(
                        kept,
                        point,
                        &mut |t, point, _| {
                            let mut v = splat.clone();
                            t.stash_load(point, &mut v);
                            t.reread_load(point, &mut v);
                            t.eval(0..n, Level::Element, point, &mut v)
                        },
                        &mut scalar,
                    )?;
                } else {
                    self.inner(kept, point, &mut scalar)?;
                }
                self.skip = None;
                self.rereading = None;
                self.live = None;
                self.touches = None;
                point[kept..].iter_mut().for_each(|p| *p = self.zero);
                continue;
            };
            self.touches = if i > 0 { touches.clone() } else { None };
            let Instr::Reduce { op, x } = self.k.body[r] else {
                unreachable!("a pass folds a Reduce instruction")
            };
            let dtype = self.types[r].expect("reductions have a value");
            let (acc_ty, identity) = self.identity(op, dtype);
            let acc = self.b.declare_var(acc_ty);
            self.b.def_var(acc, identity);
            // A pass after the one that writes the reread value reads it back.
            let reads_back = self.reread.filter(|rr| rr.reduce != r);
            self.live = Some(match reads_back {
                Some(rr) => self.k.element_cone(&self.levels, &[x], &[rr.value]),
                None => self.mask(&pass.elements),
            });
            if reads_back.is_some() {
                self.reread_here();
            }
            let mut scalar = |t: &mut Self, point: &mut Vec<Value>| {
                let mut v = vals.to_vec();
                t.reread_load(point, &mut v);
                t.eval(0..r, Level::Element, point, &mut v)?;
                t.stash_store(r, point, &v)?;
                let x = v[x].expect("invariant: a reduction's operand is computed before it");
                t.step(op, dtype, acc, x)
            };
            if self.row_simd {
                self.vector_reduce(r, op, acc, point, vals, &mut scalar)?;
            } else {
                self.inner(kept, point, &mut scalar)?;
            }
            self.live = None;
            self.rereading = None;
            self.touches = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
            let a = self.b.use_var(acc);
            let done = self.finish(op, dtype, a)?;
            vals[r] = Some(self.pin(&[done])[0]);
        }
        if reducing {
            self.clear_bases();
        }
        Ok(())
    }

    /// For a SIMD row program with one reduced dim: the start of the next row (the last kept
    /// dim plus one, or this row at the end of that dim) for every element-level load that is
    /// contiguous along the row, with its element size.
    ///
    /// A row's first pass streams it from memory; the later passes compute from cache, and
    /// while they run nothing asks for the next row: the hardware prefetchers follow demand
    /// misses, so they stop too, and the next row's first pass starts cold. Touching the next
    /// row during the later passes (one byte per [`PASS_LANES`] elements, a cache line of f32)
    /// overlaps its transfer with this row's arithmetic. The touches are prefetches
    /// (`prefetch.rs`), or byte loads in code compiled without them: every address touched is
    /// inside a row the kernel itself reads.
    /// `None` where there is nothing to touch.
    fn next_row_touches(&mut self, point: &[Value], kept: usize) -> Option<Vec<(Value, i64)>> {
        // Only a row with a pass after its first (another reduction, or the final stores).
        let passes = self
            .k
            .passes()
            .iter()
            .filter(|p| p.reduce.is_some() || !p.elements.is_empty())
            .count();
        if !self.row_simd || kept == 0 || self.k.reduce_axes != 1 || passes < 2 {
            return None;
        }
        let d = kept - 1;
        let end = if d == 0 { self.end } else { self.sizes[d] };
        let next = self.b.ins().iadd_imm_s(point[d], 1);
        let inside = self.b.ins().icmp(IntCC::SignedLessThan, next, end);
        let row = self.b.ins().select(inside, next, point[d]);
        let mut at = point[..kept].to_vec();
        at[d] = row;
        at.resize(point.len(), self.zero);
        let mut args = vec![];
        let mut addrs = vec![];
        for i in 0..self.k.body.len() {
            let Instr::Load { arg, index, .. } = &self.k.body[i] else {
                continue;
            };
            // A load that does not move from row to row (layernorm's weight and bias,
            // broadcast over the rows) has nothing to fetch: the next row's bytes are its own.
            if self.levels[i] != Level::Element
                || index.strides.last() != Some(&1)
                || index.strides[d] == 0
                || args.contains(arg)
            {
                continue;
            }
            args.push(*arg);
            addrs.push(self.address(i, *arg, &at));
        }
        if args.is_empty() {
            return None;
        }
        let pinned = self.pin(&addrs);
        let touches = args
            .iter()
            .zip(pinned)
            .map(|(arg, a)| (a, self.k.args[*arg].dtype.size() as i64))
            .collect();
        Some(touches)
    }

    /// In a pass trip starting at element `i` of the row, touches the next row at `i` (see
    /// [`Self::next_row_touches`]).
    pub(super) fn touch_next_row(&mut self, i: Value) {
        let Some(touches) = self.touches.clone() else {
            return;
        };
        for (base, size) in touches {
            let off = self.b.ins().ishl_imm_s(i, size.trailing_zeros() as i64);
            let addr = self.b.ins().iadd(base, off);
            if self.prefetch {
                self.prefetch(addr, 0);
            } else {
                // A load that may trap is never removed, though nothing reads its byte.
                self.b.ins().load(types::I8, MemFlagsData::new(), addr, 0);
            }
        }
    }

    /// `elements` as a mask over the body (what [`Self::live`] holds).
    pub(super) fn mask(&self, elements: &[usize]) -> Vec<bool> {
        let mut mask = vec![false; self.k.body.len()];
        for &i in elements {
            mask[i] = true;
        }
        mask
    }

    /// Pins the row-level values computed by the instructions of `range` (see [`Self::pin`]).
    pub(super) fn pin_row_values(
        &mut self,
        range: std::ops::Range<usize>,
        vals: &mut [Option<Value>],
    ) {
        let at: Vec<usize> = range
            .filter(|&j| {
                // Constants are rematerialised where used: pinning them would only cost a
                // store and a load per row.
                self.levels[j] == Level::Row
                    && vals[j].is_some()
                    && !matches!(self.k.body[j], Instr::Const { .. })
            })
            .collect();
        if at.is_empty() {
            return;
        }
        let values: Vec<Value> = at.iter().map(|&j| vals[j].expect("filtered")).collect();
        let pinned = self.pin(&values);
        for (j, v) in at.into_iter().zip(pinned) {
            vals[j] = Some(v);
        }
    }

    /// In the pass of reduction `r`, writes the stashed value to its place in the output (or
    /// the scratch row, [`Self::stash_address`]).
    pub(super) fn stash_store(
        &mut self,
        r: usize,
        point: &[Value],
        vals: &[Option<Value>],
    ) -> Result<()> {
        if let Some(rr) = self.reread.filter(|rr| rr.reduce == r) {
            let x = vals[rr.value].expect("invariant: the reread value precedes the reduction");
            let addr = self.reread_address(point);
            self.b.ins().store(mem(), x, addr, 0);
        }
        match self.stash {
            Some(st) if st.reduce == r => {
                let x =
                    vals[st.value].expect("invariant: the stashed value precedes the reduction");
                let addr = self.stash_address(st, point);
                self.b.ins().store(mem(), x, addr, 0);
                Ok(())
            }
            Some(_) | None => Ok(()),
        }
    }

    /// The reread value's instruction, if the kernel has one ([`reread_plan`]).
    fn reread_value(&self) -> Option<usize> {
        self.reread.map(|rr| rr.value)
    }

    /// In a pass after the first, whose [`Self::live`] is set: when the pass needs the reread
    /// value, it is read back ([`Self::reread_load`]) instead of computed.
    fn reread_here(&mut self) {
        self.rereading = self
            .reread
            .map(|rr| rr.value)
            .filter(|&v| self.live.as_ref().is_some_and(|live| live[v]));
    }

    /// Where the reread value of the row's element at `point` waits: the reread row of the
    /// call's scratch (f32, indexed by the reduced dim).
    fn reread_address(&mut self, point: &[Value]) -> Value {
        let base = self
            .reread_row
            .expect("invariant: a kernel with a reread has its row");
        let at = *point.last().expect("a reread has a reduced dim");
        let bytes = self.b.ins().ishl_imm_s(at, 2);
        self.b.ins().iadd(base, bytes)
    }

    /// In a pass that reads the reread value back ([`Self::reread_here`]), loads it.
    pub(super) fn reread_load(&mut self, point: &[Value], vals: &mut [Option<Value>]) {
        if let Some(value) = self.rereading {
            let addr = self.reread_address(point);
            let t = if self.vector {
                types::F32X4
            } else {
                types::F32
            };
            vals[value] = Some(self.b.ins().load(t, mem(), addr, 0));
        }
    }

    /// Where the stashed value of the row's element at `point` waits: its place in the
    /// output, or the scratch row (`scratch_row`; a streaming variant's, so that the output
    /// can be written with streaming stores, or a half-precision output's), indexed by the
    /// reduced dim. The stash's dtype is f32 or f64 (`stash_plan`): one plain store of the
    /// value in either place.
    fn stash_address(&mut self, st: Stash, point: &[Value]) -> Value {
        let Some(base) = self.scratch else {
            return self.address(st.store, st.arg, point);
        };
        let size = st.dtype.size() as i64;
        let at = *point.last().expect("a stash has a reduced dim");
        let bytes = self.b.ins().ishl_imm_s(at, size.trailing_zeros() as i64);
        self.b.ins().iadd(base, bytes)
    }

    /// In the final pass, reads the stashed value back instead of recomputing it.
    pub(super) fn stash_load(&mut self, point: &[Value], vals: &mut [Option<Value>]) {
        if let Some(st) = self.stash {
            let addr = self.stash_address(st, point);
            let t = if self.vector {
                types::F32X4
            } else {
                ty(st.dtype)
            };
            vals[st.value] = Some(self.b.ins().load(t, mem(), addr, 0));
        }
    }

    /// `vals` with every row-level f32 (or f16, bf16) value splatted to f32x4, for a SIMD pass
    /// over a row.
    pub(super) fn splat_row_values(&mut self, vals: &[Option<Value>]) -> Vec<Option<Value>> {
        (0..vals.len())
            .map(|j| match vals[j] {
                Some(v)
                    if self.levels[j] == Level::Row
                        && self.types[j].map(register_dtype) == Some(DType::F32) =>
                {
                    Some(self.b.ins().splat(types::F32X4, v))
                }
                other => other,
            })
            .collect()
    }

    /// One SIMD pass of reduction `r` (an f32 sum, max or min) over the row into `acc`: the
    /// vector part into [`PASS_LANES`] lanes (f64 lanes for a sum), combined in a fixed tree,
    /// then the scalar tail through `scalar`.
    pub(super) fn vector_reduce(
        &mut self,
        r: usize,
        op: ReduceOp,
        acc: Variable,
        point: &mut Vec<Value>,
        vals: &[Option<Value>],
        scalar: &mut dyn FnMut(&mut Self, &mut Vec<Value>) -> Result<()>,
    ) -> Result<()> {
        let Instr::Reduce { x, .. } = self.k.body[r] else {
            unreachable!("r is a reduction")
        };
        let kept = self.k.shape.len() - self.k.reduce_axes;
        let sum = op == ReduceOp::Sum;
        // A sum keeps one pair of f64x2 accumulators: a trip's four vectors are added in f64
        // first ([`Self::trip_sum`]), which keeps fewer registers live than a pair per vector
        // (softmax's `exp` spilled less). Max and min keep one set per vector of a trip
        // ([`Self::vector_accs`]) and fold with `maxps`/`minps`, which keep the accumulator
        // when the new element is NaN; a NaN seen anywhere is recorded in lane masks and wins
        // at the end.
        let sets = if sum { 1 } else { PASS_LANES / LANES };
        let groups: Vec<Vec<Variable>> = (0..sets).map(|_| self.vector_accs(op)).collect();
        let splat = self.splat_row_values(vals);
        let mut trip = None;
        let mut narrow_trip = vec![];
        // A widened sum folds the f32 value; its cast to f64 is not emitted in vector code.
        let (widened, x) = match self.widened_sum(r) {
            Some(y) => (Some(x), y),
            None => (None, x),
        };
        // A sum of terms that are never negative adds a trip's vectors in f32 first (not a
        // sum the program asked for in f64).
        let narrow = sum && widened.is_none() && self.k.nonnegative()[x];
        self.inner_vector(
            kept,
            point,
            &mut |t, point, u| {
                let mut v = splat.clone();
                t.reread_load(point, &mut v);
                t.skip = widened;
                t.eval(0..r, Level::Element, point, &mut v)?;
                t.skip = None;
                t.stash_store(r, point, &v)?;
                let x = v[x].expect("invariant: a reduction's operand is computed before it");
                if sum && t.in_trip {
                    let last = u == (PASS_LANES / LANES) as usize - 1;
                    if narrow {
                        t.narrow_trip_sum(&groups[0], &mut narrow_trip, x, u);
                    } else {
                        t.trip_sum(&groups[0], &mut trip, x, last);
                    }
                } else {
                    t.vector_fold(op, &groups[if sum { 0 } else { u }], x);
                }
                Ok(())
            },
            scalar,
        )?;
        // The accumulated vectors in a fixed order (a sum's halves low then high).
        let values: Vec<Variable> = if sum {
            groups.iter().flatten().copied().collect()
        } else {
            groups.iter().map(|g| g[0]).collect()
        };
        let mut parts: Vec<Value> = values.iter().map(|a| self.b.use_var(*a)).collect();
        while parts.len() > 1 {
            parts = parts
                .chunks(2)
                .map(|p| self.fold_lanes(op, p[0], p[1]))
                .collect();
        }
        let v = parts[0];
        if sum {
            let l0 = self.b.ins().extractlane(v, 0);
            let l1 = self.b.ins().extractlane(v, 1);
            let total = self.b.ins().fadd(l0, l1);
            let tail = self.b.use_var(acc);
            let all = self.b.ins().fadd(total, tail);
            self.b.def_var(acc, all);
        } else {
            for lane in 0..LANES as u8 {
                let l = self.b.ins().extractlane(v, lane);
                self.step(op, DType::F32, acc, l)?;
            }
            let mut seen = self.b.use_var(groups[0][1]);
            for g in &groups[1..] {
                let more = self.b.use_var(g[1]);
                seen = self.b.ins().bor(seen, more);
            }
            let any = self.b.ins().vany_true(seen);
            let a = self.b.use_var(acc);
            let nan = self.b.ins().f64const(f64::NAN);
            let a = self.b.ins().select(any, nan, a);
            self.b.def_var(acc, a);
        }
        Ok(())
    }

    /// The starting value of a SIMD accumulator of `op` (sum, max or min): an f64x2 of zeros
    /// for a sum, an f32x4 of ∓∞ for max and min.
    pub(super) fn simd_identity(&mut self, op: ReduceOp) -> Value {
        if op == ReduceOp::Sum {
            let z = self.b.ins().f64const(0.0);
            return self.b.ins().splat(types::F64X2, z);
        }
        let e = if op == ReduceOp::Max {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        };
        let e = self.b.ins().f32const(e);
        self.b.ins().splat(types::F32X4, e)
    }

    /// The accumulators of one f32x4 of a reduction (four rows of a column reduction, or
    /// one vector of a row pass): two f64x2 halves for a sum; for max and min an f32x4 and a
    /// lane mask of the NaNs seen.
    pub(super) fn vector_accs(&mut self, op: ReduceOp) -> Vec<Variable> {
        let var = |t: &mut Self, ty: Type, init: Value| {
            let v = t.b.declare_var(ty);
            t.b.def_var(v, init);
            v
        };
        let e = self.simd_identity(op);
        if op == ReduceOp::Sum {
            vec![var(self, types::F64X2, e), var(self, types::F64X2, e)]
        } else {
            let none = self.b.ins().iconst(types::I32, 0);
            let none = self.b.ins().splat(types::I32X4, none);
            vec![var(self, types::F32X4, e), var(self, types::I32X4, none)]
        }
    }

    /// An f32x4 folded into its accumulators ([`Self::vector_accs`]) lane by lane, as the
    /// scalar step does (a sum adds in f64; max and min keep the earlier value on ties).
    pub(super) fn vector_fold(&mut self, op: ReduceOp, accs: &[Variable], y: Value) {
        if op == ReduceOp::Sum {
            let lo = self.b.ins().fvpromote_low(y);
            let high = self.high_half(y);
            let hi = self.b.ins().fvpromote_low(high);
            for (acc, half) in accs.iter().zip([lo, hi]) {
                let a = self.b.use_var(*acc);
                let a = self.b.ins().fadd(a, half);
                self.b.def_var(*acc, a);
            }
        } else {
            let a = self.b.use_var(accs[0]);
            let a = self.fold_lanes(op, a, y);
            self.b.def_var(accs[0], a);
            let seen = self.b.use_var(accs[1]);
            let nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
            let seen = self.b.ins().bor(seen, nan);
            self.b.def_var(accs[1], seen);
        }
    }

    /// One vector of a trip of a SIMD sum pass: its f32 lanes widened to two f64x2 halves and
    /// added to the trip's running halves in `pending`; after the trip's `last` vector the
    /// halves go into `accs` ([`Self::vector_accs`]). Element `j` of a trip is summed in f64
    /// lane `j mod 4`, in order. The f64 sum of `n` f32 values is exact while their exponents
    /// span at most 29 − log2 `n` binades (24 significant bits each in f64's 53), and then
    /// this order gives the interpreter's bits as the per-vector one did.
    pub(super) fn trip_sum(
        &mut self,
        accs: &[Variable],
        pending: &mut Option<(Value, Value)>,
        x: Value,
        last: bool,
    ) {
        let lo = self.b.ins().fvpromote_low(x);
        let high = self.high_half(x);
        let hi = self.b.ins().fvpromote_low(high);
        let (lo, hi) = match pending.take() {
            None => (lo, hi),
            Some((a, b)) => (self.b.ins().fadd(a, lo), self.b.ins().fadd(b, hi)),
        };
        if !last {
            *pending = Some((lo, hi));
            return;
        }
        for (acc, half) in accs.iter().zip([lo, hi]) {
            let a = self.b.use_var(*acc);
            let a = self.b.ins().fadd(a, half);
            self.b.def_var(*acc, a);
        }
    }

    /// Vector `u` of a trip of a SIMD sum pass whose terms are never negative
    /// ([`Kernel::nonnegative`]): the trip's vectors are added in f32 as a balanced tree,
    /// `(v0 + v1) + (v2 + v3)` (`pending` holds the tree's open nodes), and the root widened
    /// into `accs` after the last. With no cancellation each f32 addition errs by at most half
    /// an ulp of a partial sum no larger than the whole, so a lane's trip sum is within
    /// 2·2⁻²⁴ of its exact value, relatively, and the row's sum, rounded to f32, within about
    /// 2.5 ulps of the interpreter's exact f64 sum (PyTorch's own f32 sums keep f32 partials
    /// over far longer runs). It saves the widening of three vectors of four: most of what a
    /// light row pass such as `((a − b)²).sum(1)` executes.
    pub(super) fn narrow_trip_sum(
        &mut self,
        accs: &[Variable],
        pending: &mut Vec<Value>,
        x: Value,
        u: usize,
    ) {
        pending.push(x);
        // After vector `u`, merge as many pairs as `u + 1` has factors of two.
        for _ in 0..(u + 1).trailing_zeros() {
            let b = pending.pop().expect("invariant: a pair is open");
            let a = pending.pop().expect("invariant: a pair is open");
            pending.push(self.b.ins().fadd(a, b));
        }
        if u + 1 < (PASS_LANES / LANES) as usize {
            return;
        }
        let root = pending.pop().expect("invariant: the trip's tree is closed");
        debug_assert!(pending.is_empty(), "a trip is a power of two vectors");
        self.vector_fold(ReduceOp::Sum, accs, root);
    }

    /// `a ⊕ b` lane by lane for a SIMD reduction pass (sum, max or min: the only reductions
    /// `vectorizable_rows` admits). Max and min keep `a` where `b` is not greater (or less),
    /// NaN included: one `maxps`/`minps`; the caller tracks NaNs itself ([`Self::vector_reduce`]).
    pub(super) fn fold_lanes(&mut self, op: ReduceOp, a: Value, b: Value) -> Value {
        match op {
            ReduceOp::Sum => self.b.ins().fadd(a, b),
            ReduceOp::Max => {
                let take = self.b.ins().fcmp(FloatCC::LessThan, a, b);
                let take = self.b.ins().bitcast(types::F32X4, little(), take);
                self.b.ins().bitselect(take, b, a)
            }
            ReduceOp::Min => {
                let take = self.b.ins().fcmp(FloatCC::LessThan, b, a);
                let take = self.b.ins().bitcast(types::F32X4, little(), take);
                self.b.ins().bitselect(take, b, a)
            }
            ReduceOp::Prod | ReduceOp::All | ReduceOp::Any => {
                unreachable!("vectorizable_rows admits only sum, max and min")
            }
        }
    }

    /// Lanes 2 and 3 of an f32x4 moved to lanes 0 and 1.
    pub(super) fn high_half(&mut self, x: Value) -> Value {
        self.shuffle32(x, x, [2, 3, 2, 3])
    }

    /// A reduction's accumulator type and its starting value (the interpreter's
    /// [`reduce_identity`]): bools and all/any in i8, floats in f64, integers in i64.
    pub(super) fn identity(&mut self, op: ReduceOp, dtype: DType) -> (Type, Value) {
        let bool_acc = dtype == DType::Bool || matches!(op, ReduceOp::All | ReduceOp::Any);
        let v = reduce_identity(op, if bool_acc { DType::Bool } else { dtype });
        let ins = self.b.ins();
        if bool_acc {
            (types::I8, ins.iconst(types::I8, i64::from(v.as_bool())))
        } else if dtype.is_float() {
            (types::F64, ins.f64const(v.as_f64()))
        } else {
            (types::I64, ins.iconst(types::I64, v.as_i64()))
        }
    }

    /// `acc = acc ⊕ x`, as `reduce_step` does.
    pub(super) fn step(
        &mut self,
        op: ReduceOp,
        dtype: DType,
        acc: Variable,
        x: Value,
    ) -> Result<()> {
        let a = self.b.use_var(acc);
        // all/any fold truthiness whatever the dtype; the result is cast back at the end.
        let x = match op {
            ReduceOp::All | ReduceOp::Any if dtype != DType::Bool => {
                self.cast(x, dtype, DType::Bool)?
            }
            ReduceOp::Sum
            | ReduceOp::Prod
            | ReduceOp::Max
            | ReduceOp::Min
            | ReduceOp::All
            | ReduceOp::Any => x,
        };
        let next = if dtype == DType::Bool || matches!(op, ReduceOp::All | ReduceOp::Any) {
            match op {
                ReduceOp::Sum | ReduceOp::Max | ReduceOp::Any => self.b.ins().bor(a, x),
                ReduceOp::Prod | ReduceOp::Min | ReduceOp::All => self.b.ins().band(a, x),
            }
        } else if dtype.is_float() {
            let v = self.widen(dtype, x);
            match op {
                ReduceOp::Sum => self.b.ins().fadd(a, v),
                ReduceOp::Prod => self.b.ins().fmul(a, v),
                ReduceOp::Max | ReduceOp::Min => {
                    let cc = if op == ReduceOp::Max {
                        FloatCC::GreaterThan
                    } else {
                        FloatCC::LessThan
                    };
                    let better = self.b.ins().fcmp(cc, v, a);
                    let picked = self.b.ins().select(better, v, a);
                    let nan = self.b.ins().fcmp(FloatCC::Unordered, a, v);
                    let qnan = self.b.ins().f64const(f64::NAN);
                    self.b.ins().select(nan, qnan, picked)
                }
                ReduceOp::All | ReduceOp::Any => return unsupported("all/any over floats"),
            }
        } else {
            let v = self.extend(dtype, x);
            match op {
                ReduceOp::Sum => self.b.ins().iadd(a, v),
                ReduceOp::Prod => self.b.ins().imul(a, v),
                ReduceOp::Max => self.b.ins().smax(a, v),
                ReduceOp::Min => self.b.ins().smin(a, v),
                ReduceOp::All | ReduceOp::Any => return unsupported("all/any over integers"),
            }
        };
        self.b.def_var(acc, next);
        Ok(())
    }

    pub(super) fn finish(&mut self, op: ReduceOp, dtype: DType, acc: Value) -> Result<Value> {
        Ok(if dtype == DType::Bool {
            acc
        } else if matches!(op, ReduceOp::All | ReduceOp::Any) {
            self.cast(acc, DType::Bool, dtype)?
        } else if dtype.is_float() {
            self.narrow_f64(dtype, acc)
        } else if dtype == DType::I64 {
            acc
        } else {
            self.b.ins().ireduce(ty(dtype), acc)
        })
    }
}
