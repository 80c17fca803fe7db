//! Column reductions: SIMD lanes across rows of the innermost kept dim when the reduced dim
//! is strided (`x.sum(0)`), each lane accumulating its own row in order, as the reference does.

use super::*;

/// Vectors of rows a column reduction handles per trip ([`Translator::column_rows`]): 16 f32
/// rows, one cache line of each contiguous load per step of the reduced dims.
const COLUMN_GROUPS: i64 = 4;
/// Rows of a column block ([`Translator::column_block`]): 256 f32 rows, so each step of the
/// reduced dims reads 1 KiB contiguously per load (whole lines and pages, which the
/// prefetchers follow) while the block's accumulators (2 KiB) and each reduction's results
/// (1 KiB) stay in L1.
const COLUMN_BLOCK: i64 = 256;
/// Rows of a column block in a kernel with one walk (one reduction and no element-level
/// stores, `x.sum(0)`): each step reads 4 KiB of a row, and DRAM serves such runs far better
/// than 1 KiB ones (measured in C: `docs/benchmarks.md`, "Figures behind the code's
/// constants"). Its f64 accumulators take 8 KiB of L1. A kernel with more walks keeps
/// [`COLUMN_BLOCK`]: its later walks re-read the block, which must stay in cache.
const WIDE_COLUMN_BLOCK: i64 = 1024;
/// Steps of the innermost reduced dim a column block's walk takes per visit of a vector
/// ([`Translator::inner_steps`]): its accumulators are loaded and stored once per 8 rows
/// folded in order, and each visit reads 8 lines of different rows, which keeps more misses
/// in flight than the prefetchers start for 1 KiB runs 16 KiB apart.
const COLUMN_STEPS: i64 = 8;

/// Whether a reduction kernel runs in columns: SIMD lanes along its innermost kept dim, each
/// lane a row of its own, the reduced dims walked in scalar steps. Chosen when no load walks
/// the innermost reduced dim contiguously (so row passes would gather every lane) and some
/// load walks the innermost kept dim contiguously (`x.sum(0)`, a softmax over dim 0): every
/// load is contiguous or broadcast along that kept dim, every store contiguous along it,
/// every value f32 with a vector form, and every reduction an f32 sum, max or min.
/// Everything it looks at is part of the structure key.
pub(crate) fn columns(k: &Kernel) -> bool {
    let rank = k.shape.len();
    if k.reduce_axes == 0 || k.reduce_axes == rank {
        return false;
    }
    let lane = rank - k.reduce_axes - 1;
    let types = k.value_dtypes();
    let levels = k.levels();
    let f32_or_bool = |v: usize| matches!(types[v], Some(DType::F32 | DType::Bool));
    let mut contiguous = false;
    let ok = k.body.iter().enumerate().all(|(i, instr)| match instr {
        Instr::Load { index, .. } => {
            contiguous |= index.strides[lane] == 1;
            types[i] == Some(DType::F32)
                && matches!(index.strides[lane], 0 | 1)
                && index.strides[rank - 1] != 1
        }
        Instr::Store { index, x, .. } => types[*x] == Some(DType::F32) && index.strides[lane] == 1,
        Instr::Const { dtype, .. } => *dtype == DType::F32,
        Instr::Unary { x, compute, .. } | Instr::Binary { a: x, compute, .. } => {
            *compute == DType::F32 && f32_or_bool(*x)
        }
        Instr::Where { a, .. } => types[*a] == Some(DType::F32),
        Instr::Reduce { op, x } => {
            matches!(op, ReduceOp::Sum | ReduceOp::Max | ReduceOp::Min)
                && types[i] == Some(DType::F32)
                && levels[*x] == Level::Element
        }
        Instr::Cast { .. } | Instr::Random { .. } => false,
    });
    ok && contiguous
}

/// Rows of the widest column blocks of column kernel `k`: [`WIDE_COLUMN_BLOCK`] for a kernel
/// with one walk, else [`COLUMN_BLOCK`].
pub(crate) fn column_block_rows(k: &Kernel) -> usize {
    let levels = k.levels();
    let element_stores = k
        .body
        .iter()
        .enumerate()
        .any(|(i, instr)| matches!(instr, Instr::Store { .. }) && levels[i] == Level::Element);
    (if k.reduces().len() == 1 && !element_stores {
        WIDE_COLUMN_BLOCK
    } else {
        COLUMN_BLOCK
    }) as usize
}

impl<'a, 'f> Translator<'a, 'f> {
    /// The innermost kept dim of a column reduction over `start..end`: blocks of
    /// [`column_block_rows`] rows, then of [`COLUMN_BLOCK`], then [`COLUMN_GROUPS`] vectors
    /// of rows a trip, then one, then single rows (scalar code).
    pub(super) fn column_loop(
        &mut self,
        start: Value,
        end: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        self.home_consts();
        let d = self.k.shape.len() - self.k.reduce_axes - 1;
        let widest = column_block_rows(self.k) as i64;
        let wide_blocks = self.whole_steps(start, end, widest);
        let blocks = self.whole_steps(wide_blocks, end, COLUMN_BLOCK);
        let wide = self.whole_steps(blocks, end, COLUMN_GROUPS * LANES);
        let whole = self.whole_steps(start, end, LANES);
        self.lane_dim = d;
        self.for_loop(start, wide_blocks, widest, &mut |t, i| {
            t.column_block(i, widest, point, vals)
        })?;
        if widest != COLUMN_BLOCK {
            self.for_loop(wide_blocks, blocks, COLUMN_BLOCK, &mut |t, i| {
                t.column_block(i, COLUMN_BLOCK, point, vals)
            })?;
        }
        self.for_loop(blocks, wide, COLUMN_GROUPS * LANES, &mut |t, i| {
            t.column_rows(i, COLUMN_GROUPS as usize, point, vals)
        })?;
        self.for_loop(wide, whole, LANES, &mut |t, i| {
            t.column_rows(i, 1, point, vals)
        })?;
        self.lane_dim = self.k.shape.len() - 1;
        self.for_loop(whole, end, 1, &mut |t, i| {
            point[d] = i;
            let mut v = vals.to_vec();
            t.row(point, &mut v)
        })
    }

    /// The row program for `groups` vectors of rows at once (rows `i..i + 4·groups` of the
    /// innermost kept dim, one per lane): each reduction is one walk over the reduced dims in
    /// order, every lane accumulating its own row as the reference does (f64 lanes for sums,
    /// so results are the same bits), then the row-level instructions and element-level
    /// stores, all on vectors.
    pub(super) fn column_rows(
        &mut self,
        i: Value,
        groups: usize,
        point: &mut Vec<Value>,
        vals: &[Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let kept = rank - self.k.reduce_axes;
        let (ld, n) = (kept - 1, self.k.body.len());
        // Per vector of rows: its pinned bases and its first row.
        let mut at = vec![];
        for u in 0..groups {
            let row = self.b.ins().iadd_imm_s(i, u as i64 * LANES);
            point[ld] = row;
            self.set_bases(point, kept);
            at.push((self.bases.clone(), row));
        }
        self.vector = true;
        let mut vs: Vec<Vec<Option<Value>>> = vec![vals.to_vec(); groups];
        // The row program (`Kernel::passes`), each row of the group in its own lanes.
        for pass in self.k.passes() {
            for u in 0..groups {
                self.enter_rows(&at[u], point, ld);
                self.eval(pass.row.clone(), Level::Row, point, &mut vs[u])?;
            }
            let Some(r) = pass.reduce else {
                if pass.elements.is_empty() {
                    continue;
                }
                self.live = Some(self.mask(&pass.elements));
                self.inner(kept, point, &mut |t, point| {
                    for u in 0..groups {
                        t.enter_rows(&at[u], point, ld);
                        let mut v = vs[u].clone();
                        t.eval(0..n, Level::Element, point, &mut v)?;
                    }
                    Ok(())
                })?;
                self.live = None;
                point[kept..].iter_mut().for_each(|p| *p = self.zero);
                continue;
            };
            let Instr::Reduce { op, x } = self.k.body[r] else {
                unreachable!("a pass folds a Reduce instruction")
            };
            let accs: Vec<Vec<Variable>> = (0..groups).map(|_| self.vector_accs(op)).collect();
            self.live = Some(self.mask(&pass.elements));
            self.inner(kept, point, &mut |t, point| {
                for u in 0..groups {
                    t.enter_rows(&at[u], point, ld);
                    let mut v = vs[u].clone();
                    t.eval(0..r, Level::Element, point, &mut v)?;
                    let y = v[x].expect("invariant: a reduction's operand is computed before it");
                    t.vector_fold(op, &accs[u], y);
                }
                Ok(())
            })?;
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
            for u in 0..groups {
                vs[u][r] = Some(self.column_finish(op, &accs[u]));
            }
        }
        self.vector = false;
        self.clear_bases();
        Ok(())
    }

    /// Rows `i..i + rows` of a column reduction, the accumulators of the block's
    /// vectors and each reduction's results in stack slots. Every pass walks the reduced
    /// dims once and, at each step, every vector of the block (so a load reads the block's
    /// rows contiguously); other row-level values are recomputed from the stored results
    /// where a pass needs them. Then the row-level tail and its stores run per vector, and a
    /// last walk stores the element-level outputs.
    fn column_block(
        &mut self,
        i: Value,
        rows: i64,
        point: &mut Vec<Value>,
        vals: &[Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let kept = rank - self.k.reduce_axes;
        let (ld, n) = (kept - 1, self.k.body.len());
        let vectors = rows / LANES;
        let slot = |t: &mut Self, bytes: i64| {
            let s = t.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes as u32,
                4,
            ));
            t.b.ins().stack_addr(types::I64, s, 0)
        };
        let accs = slot(self, vectors * 32);
        // The stored accumulators of vector `g` (32 bytes each).
        let acc_at = move |t: &mut Self, g: Value| {
            let off = t.b.ins().ishl_imm_s(g, 5);
            t.b.ins().iadd(accs, off)
        };
        let reduces = self.k.reduces();
        let results: Vec<Value> = reduces.iter().map(|_| slot(self, vectors * 16)).collect();
        point[ld] = i;
        self.set_bases(point, ld);
        self.vector = true;
        let zero = self.zero;
        let count = self.b.ins().iconst(types::I64, vectors);
        // Values of vector `g` of the block: the reductions done so far loaded, the rest of
        // the row-level program up to `upto` recomputed (stores left out).
        let at_vector =
            |t: &mut Self, g: Value, done: usize, upto: usize, point: &mut Vec<Value>| {
                let lanes = t.b.ins().ishl_imm_s(g, 2);
                point[ld] = t.b.ins().iadd(i, lanes);
                let mut v = vals.to_vec();
                let off = t.b.ins().ishl_imm_s(g, 4);
                for (&r, &base) in reduces[..done].iter().zip(&results) {
                    let at = t.b.ins().iadd(base, off);
                    v[r] = Some(t.b.ins().load(types::F32X4, mem(), at, 0));
                }
                for j in 0..upto {
                    if !matches!(t.k.body[j], Instr::Store { .. }) {
                        t.eval(j..j + 1, Level::Row, point, &mut v)?;
                    }
                }
                Ok::<_, Unsupported>(v)
            };
        // Element-level outputs that need nothing from the last reduction on are stored by
        // its walk (softmax over dim 0 storing `exp(x - max)` beside the sum), which spares
        // a walk of their own.
        let stores = self.element_stores();
        let early = self.stored_by_last_walk(&stores);
        for (done, &r) in reduces.iter().enumerate() {
            let Instr::Reduce { op, x } = self.k.body[r] else {
                unreachable!("reduces() lists Reduce instructions")
            };
            let last = done + 1 == reduces.len();
            let mut roots = vec![x];
            if last && early {
                roots.extend(&stores);
            }
            let init = self.vector_accs(op);
            self.for_loop(zero, count, 1, &mut |t, g| {
                let at = acc_at(t, g);
                for (half, v) in init.iter().enumerate() {
                    let v = t.b.use_var(*v);
                    t.b.ins().store(mem(), v, at, (16 * half) as i32);
                }
                Ok(())
            })?;
            self.live = Some(self.k.element_cone(&self.levels, &roots, &[]));
            let upto = if last && early { n } else { r };
            let block = (self.bases.clone(), self.bases_level);
            self.inner_steps(kept, point, COLUMN_STEPS, &mut |t, points| {
                // Each step's addresses but the lane dim's part, computed once per visit of
                // the block (cranelift would recompute each step's row offset per vector).
                let steps: Vec<_> = points.iter().map(|p| t.lane_bases(p, ld)).collect();
                t.for_loop(zero, count, 1, &mut |t, g| {
                    let mut point = points[0].clone();
                    let row = at_vector(t, g, done, r, &mut point)?;
                    let at = acc_at(t, g);
                    let accs = t.column_accs_at(op, at);
                    // Only the lane dim is left to add to the step's bases.
                    let mut lane = vec![t.zero; point.len()];
                    lane[ld] = point[ld];
                    for bases in &steps {
                        (t.bases, t.bases_level) = (bases.clone(), 0);
                        let mut v = row.clone();
                        t.eval(0..upto, Level::Element, &lane, &mut v)?;
                        let y = v[x].expect("invariant: a reduction's operand is computed first");
                        t.vector_fold(op, &accs, y);
                    }
                    (t.bases, t.bases_level) = block.clone();
                    t.column_store_at(&accs, at);
                    Ok(())
                })
            })?;
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
            let result = results[done];
            self.for_loop(zero, count, 1, &mut |t, g| {
                let at = acc_at(t, g);
                let value = t.column_finish_at(op, at);
                let off = t.b.ins().ishl_imm_s(g, 4);
                let at = t.b.ins().iadd(result, off);
                t.b.ins().store(mem(), value, at, 0);
                Ok(())
            })?;
        }
        let all = reduces.len();
        // The row-level tail, stores included.
        self.for_loop(zero, count, 1, &mut |t, g| {
            let mut v = at_vector(t, g, all, 0, point)?;
            t.eval(0..n, Level::Row, point, &mut v)
        })?;
        // Element-level outputs.
        if !stores.is_empty() && !early {
            self.live = Some(self.k.element_cone(&self.levels, &stores, &[]));
            self.inner(kept, point, &mut |t, point| {
                t.for_loop(zero, count, 1, &mut |t, g| {
                    let mut v = at_vector(t, g, all, n, point)?;
                    t.eval(0..n, Level::Element, point, &mut v)
                })
            })?;
            self.live = None;
            point[kept..].iter_mut().for_each(|p| *p = self.zero);
        }
        self.vector = false;
        self.clear_bases();
        Ok(())
    }

    /// Whether the element-level `stores` (some) depend on no row-level value from the last
    /// reduction on, so the last reduction's walk can store them.
    fn stored_by_last_walk(&self, stores: &[usize]) -> bool {
        let Some(&last) = self.k.reduces().last() else {
            return false;
        };
        let mut seen = vec![false; self.k.body.len()];
        let mut stack = stores.to_vec();
        while let Some(i) = stack.pop() {
            if seen[i] {
                continue;
            }
            seen[i] = true;
            if self.levels[i] == Level::Row && i >= last {
                return false;
            }
            stack.extend(self.k.body[i].operands());
        }
        !stores.is_empty()
    }

    /// [`Self::inner`] over the reduced dims from `d` with the innermost in groups of `steps`:
    /// `body` gets the points of `steps` consecutive steps, in order, then of each leftover
    /// step alone.
    fn inner_steps(
        &mut self,
        d: usize,
        point: &mut Vec<Value>,
        steps: i64,
        body: &mut dyn FnMut(&mut Self, &[Vec<Value>]) -> Result<()>,
    ) -> Result<()> {
        let last = self.k.shape.len() - 1;
        let (zero, end) = (self.zero, self.sizes[d]);
        if d < last {
            return self.for_loop(zero, end, 1, &mut |t, i| {
                point[d] = i;
                t.inner_steps(d + 1, point, steps, body)
            });
        }
        let whole = self.whole_steps(zero, end, steps);
        self.for_loop(zero, whole, steps, &mut |t, i| {
            let mut points = vec![];
            for u in 0..steps {
                point[d] = t.b.ins().iadd_imm_s(i, u);
                points.push(point.clone());
            }
            body(t, &points)
        })?;
        self.for_loop(whole, end, 1, &mut |t, i| {
            point[d] = i;
            body(t, std::slice::from_ref(point))
        })
    }

    /// Every indexed instruction's byte address at `point` with dim `lane` at 0, pinned: bases
    /// to which [`Self::address`] adds only the lane dim's part (its other coordinates zero).
    fn lane_bases(&mut self, point: &[Value], lane: usize) -> Vec<Option<Value>> {
        let saved = (self.bases.clone(), self.bases_level);
        let mut at = point.to_vec();
        at[lane] = self.zero;
        let bases = self.pinned_addresses(&at);
        (self.bases, self.bases_level) = saved;
        bases
    }

    /// Stores accumulators ([`Self::column_accs_at`]) back at `at`.
    fn column_store_at(&mut self, accs: &[Variable], at: Value) {
        for (half, acc) in accs.iter().enumerate() {
            let v = self.b.use_var(*acc);
            self.b.ins().store(mem(), v, at, (16 * half) as i32);
        }
    }

    /// [`Self::column_finish`] of accumulators stored at `at`.
    fn column_finish_at(&mut self, op: ReduceOp, at: Value) -> Value {
        let accs = self.column_accs_at(op, at);
        self.column_finish(op, &accs)
    }

    /// The accumulators stored at `at`, loaded into variables.
    fn column_accs_at(&mut self, op: ReduceOp, at: Value) -> [Variable; 2] {
        let halves = if op == ReduceOp::Sum {
            [types::F64X2, types::F64X2]
        } else {
            [types::F32X4, types::I32X4]
        };
        let accs = halves.map(|ty| self.b.declare_var(ty));
        for (half, (acc, ty)) in accs.iter().zip(halves).enumerate() {
            let v = self.b.ins().load(ty, mem(), at, (16 * half) as i32);
            self.b.def_var(*acc, v);
        }
        accs
    }

    /// The four rows' results as an f32x4 (sums rounded once from f64; NaN where one was
    /// seen).
    pub(super) fn column_finish(&mut self, op: ReduceOp, accs: &[Variable]) -> Value {
        if op == ReduceOp::Sum {
            let lo = self.b.use_var(accs[0]);
            let hi = self.b.use_var(accs[1]);
            let lo = self.b.ins().fvdemote(lo);
            let hi = self.b.ins().fvdemote(hi);
            self.shuffle32(lo, hi, [0, 1, 4, 5])
        } else {
            let a = self.b.use_var(accs[0]);
            let seen = self.b.use_var(accs[1]);
            let seen = self.b.ins().bitcast(types::F32X4, little(), seen);
            let nan = self.b.ins().f32const(f32::NAN);
            let nan = self.b.ins().splat(types::F32X4, nan);
            self.b.ins().bitselect(seen, nan, a)
        }
    }
}
