//! Tiled walks of elementwise kernels whose accesses disagree on the fastest dim (a transpose,
//! a permute-copy): blocks of rows × columns that keep every touched line in cache, and
//! transposing loads read as whole lines in 16 × 16 line blocks, or as 4×4 blocks where those
//! do not fit, transposed in registers.

use super::*;

/// Rows and columns of a block of a tiled walk ([`Translator::tiled`]). A row of a block is
/// one cache line of f32, so the contiguous accesses use whole lines per visit; the
/// transposing access reuses each of its 16 lines across the block's rows (the widths measured
/// are in `docs/benchmarks.md`, "Figures behind the code's constants").
const TILE: (i64, i64) = (64, 16);
/// The block of a tiled walk with f32 transposing loads: rows × columns chosen from the host's
/// caches (`host::Tuning::transpose_tile`, 64 × 128 on the machines measured), walked in
/// 16 × 16 line blocks ([`Translator::line_block`]), the rows and columns left over in 4×4
/// blocks ([`Translator::quad`]). Each row of the contiguous accesses is whole lines, which a
/// streaming variant writes whole ([`crate::cpu::streaming_candidate`]).
fn quad_tile() -> (i64, i64) {
    let tile = crate::cpu::host::tuning().transpose_tile;
    debug_assert!(tile.0 % LINE == 0 && tile.1 % LINE == 0, "{tile:?}");
    tile
}
/// Rows and columns of a line block ([`Translator::line_block`]): one cache line of f32.
const LINE: i64 = 16;
/// Rows of a line block emitted per trip of its row loop.
const BLOCK_ROWS_A_TRIP: i64 = 4;
/// Whether `instr` is a load whose innermost stride is neither 0 nor 1 while its stride along
/// the dim outside it is 1: in a tiled walk, four rows of it are read as four contiguous
/// column vectors and transposed (`Translator::quad`). Part of the structure key.
pub fn is_transposing_load(instr: &Instr) -> bool {
    match instr {
        Instr::Load { index, .. } => {
            let s = &index.strides;
            s.len() >= 2 && !matches!(s[s.len() - 1], 0 | 1) && s[s.len() - 2] == 1
        }
        Instr::Store { .. }
        | Instr::Const { .. }
        | Instr::Unary { .. }
        | Instr::Binary { .. }
        | Instr::Where { .. }
        | Instr::Cast { .. }
        | Instr::Reduce { .. }
        | Instr::Random { .. } => false,
    }
}

/// Whether an elementwise kernel walks its last two dims in tiles: some access moves along the
/// innermost dim with a stride other than 0 or 1 (a transposing read or write), so a plain
/// row-by-row walk would touch a new cache line (and often a new page) per element. The stride
/// class is part of the structure key, so this is decided per structure.
pub(crate) fn tiled(k: &Kernel) -> bool {
    k.reduce_axes == 0
        && k.shape.len() >= 2
        && k.body.iter().any(|instr| {
            // Memory accesses only: a random draw's index is a position, not an address.
            instr.arg().is_some()
                && instr
                    .index()
                    .is_some_and(|index| !matches!(index.strides.last(), Some(0 | 1)))
        })
}

/// Whether `k` has a transposing load and all of them read f32, which a SIMD walk reads in
/// 4×4 blocks ([`Translator::quad`]; f16 and bf16 transposing loads gather instead).
fn transposes_f32(k: &Kernel) -> bool {
    let f32_arg = |instr: &Instr| matches!(instr, Instr::Load { arg, .. } if k.args[*arg].dtype == DType::F32);
    k.body.iter().any(is_transposing_load)
        && k.body
            .iter()
            .all(|instr| !is_transposing_load(instr) || f32_arg(instr))
}

/// Where the walk goes after a row block of line blocks, for
/// [`Translator::next_block_ahead`]: worked out once per row block, not per line block.
pub(super) struct NextRows {
    /// Whether the next row block is the 16 rows below in the same columns: the tile has more
    /// row blocks, or no tile lies to its right.
    down: Value,
    /// Bytes of f32 from this row block back to its tile's first row.
    back: Value,
    /// Columns of a whole tile.
    cols: i64,
}

// Every row of every block is whole cache lines of f32, so a tiled kernel's streaming
// variant writes whole lines ([`crate::cpu::streaming_candidate`]).
const _: () = assert!(TILE.1 % LINE == 0);

impl<'a, 'f> Translator<'a, 'f> {
    /// [`tiled`] for this kernel.
    pub(super) fn tiled(&self) -> bool {
        tiled(self.k)
    }

    /// The last two dims, rows `start..end` of the first, in [`TILE`]-shaped blocks: every
    /// line a transposing access touches in a block stays in L1 until the block is done. In a
    /// SIMD kernel with a transposing load, rows go four at a time ([`Self::quad`]).
    pub(super) fn tiles(
        &mut self,
        start: Value,
        end: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        self.home_consts();
        let rank = self.k.shape.len();
        let (d, last) = (rank - 2, rank - 1);
        let quads = self.simd
            && self.mixed.is_none()
            && self.v.ty == types::F32X4
            && transposes_f32(self.k);
        let (rows, cols) = if quads { quad_tile() } else { TILE };
        let width = self.sizes[last];
        // `i0 + rows - 1 < end + rows - 1`: a partial block still runs.
        let row_end = self.b.ins().iadd_imm_s(end, rows - 1);
        let col_end = self.b.ins().iadd_imm_s(width, cols - 1);
        self.for_loop(start, row_end, rows, &mut |t, i0| {
            let i1 = t.b.ins().iadd_imm_s(i0, rows);
            let i1 = t.b.ins().smin(i1, end);
            let zero = t.zero;
            t.for_loop(zero, col_end, cols, &mut |t, j0| {
                let j1 = t.b.ins().iadd_imm_s(j0, cols);
                let j1 = t.b.ins().smin(j1, width);
                let single = if quads {
                    // Line blocks of 16 rows, then the rows left four at a time.
                    let blocks = t.whole_steps(i0, i1, LINE);
                    t.for_loop(i0, blocks, LINE, &mut |t, ib| {
                        let next = t.prefetch.then(|| t.next_rows(ib, i0, blocks, j1, cols));
                        let whole = t.whole_steps(j0, j1, LINE);
                        t.for_loop(j0, whole, LINE, &mut |t, jb| {
                            t.line_block(ib, jb, next.as_ref(), point, vals)
                        })?;
                        // The columns left of these 16 rows (none in most tiles).
                        let more = t.b.ins().icmp(IntCC::SignedLessThan, whole, j1);
                        t.when(more, &mut |t| {
                            let rows_end = t.b.ins().iadd_imm_s(ib, LINE);
                            t.for_loop(ib, rows_end, LANES, &mut |t, i| {
                                t.quad(i, whole, j1, point, vals)
                            })
                        })
                    })?;
                    let split = t.whole_steps(blocks, i1, LANES);
                    t.for_loop(blocks, split, LANES, &mut |t, i| {
                        t.quad(i, j0, j1, point, vals)
                    })?;
                    split
                } else {
                    i0
                };
                t.for_loop(single, i1, 1, &mut |t, i| {
                    point[d] = i;
                    let mut v = vals.to_vec();
                    t.set_bases(point, last);
                    let done = t.innermost(j0, j1, point, &mut v);
                    t.clear_bases();
                    done
                })
            })
        })
    }

    /// Rows `i..i+4` of a tile, columns `j0..j1`, in 4×4 blocks: each transposing load (one
    /// that walks the rows contiguously, [`is_transposing_load`]) reads four column vectors
    /// and transposes them in registers into the four rows' vectors, instead of gathering
    /// every lane with a scalar load; then each row's program runs on its vector. Leftover
    /// columns run as scalars, row by row.
    pub(super) fn quad(
        &mut self,
        i: Value,
        j0: Value,
        j1: Value,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let (d, last) = (rank - 2, rank - 1);
        // Per row: its pinned bases and its index.
        let mut at = vec![];
        for r in 0..LANES {
            let row = self.b.ins().iadd_imm_s(i, r);
            point[d] = row;
            self.set_bases(point, last);
            at.push((self.bases.clone(), row));
        }
        let split = self.whole_steps(j0, j1, LANES);
        self.vector = true;
        let mut transposed = vec![None; self.k.body.len()];
        self.for_loop(j0, split, LANES, &mut |t, j| {
            t.enter_rows(&at[0], point, d);
            for (ti, rows) in transposed.iter_mut().enumerate() {
                if !is_transposing_load(&t.k.body[ti]) {
                    continue;
                }
                let arg = t.k.body[ti].arg().expect("a load has an argument");
                let mut columns = [t.zero; 4];
                for (c, column) in columns.iter_mut().enumerate() {
                    point[last] = t.b.ins().iadd_imm_s(j, c as i64);
                    let addr = t.address(ti, arg, point);
                    *column = t.b.ins().load(types::F32X4, mem(), addr, 0);
                }
                *rows = Some(t.transpose4(columns));
            }
            point[last] = j;
            for (r, row) in at.iter().enumerate() {
                t.enter_rows(row, point, d);
                for (given, rows) in t.given.iter_mut().zip(&transposed) {
                    *given = rows.map(|rows| rows[r]);
                }
                let mut v = vals.to_vec();
                t.row(point, &mut v)?;
            }
            t.given.iter_mut().for_each(|x| *x = None);
            Ok(())
        })?;
        self.vector = false;
        for row in &at {
            self.enter_rows(row, point, d);
            self.for_loop(split, j1, 1, &mut |t, j| {
                point[last] = j;
                let mut v = vals.to_vec();
                t.row(point, &mut v)
            })?;
        }
        self.clear_bases();
        Ok(())
    }

    /// The 16 × 16 block at rows `ib..ib+16`, columns `jb..jb+16` of the last two dims: each
    /// transposing load reads 16 whole lines (16 of its rows, each the 16 block rows' values
    /// at one column), transposed in 4×4 blocks into a stack slot; then each row's program
    /// runs on four vectors, its whole line of the block. Every line the block touches is
    /// used whole at one visit, so none has to stay in L1 between visits (16 KiB strides put
    /// a tile's lines in one L1 set), and each output line is written at once (whole for a
    /// streaming store's write-combining buffer).
    pub(super) fn line_block(
        &mut self,
        ib: Value,
        jb: Value,
        next: Option<&NextRows>,
        point: &mut Vec<Value>,
        vals: &mut [Option<Value>],
    ) -> Result<()> {
        let rank = self.k.shape.len();
        let (d, last) = (rank - 2, rank - 1);
        const ROW_BYTES: i64 = LINE / LANES * 16;
        self.clear_bases();
        for ti in 0..self.k.body.len() {
            if !is_transposing_load(&self.k.body[ti]) {
                continue;
            }
            let arg = self.k.body[ti].arg().expect("a load has an argument");
            let slot = *self.block_slots[ti].get_or_insert_with(|| {
                let bytes = (LINE * ROW_BYTES) as u32;
                let data = StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 4);
                self.b.create_sized_stack_slot(data)
            });
            let (strides, _) = self.index[ti].clone().expect("loads have an index");
            let step = self.b.ins().ishl_imm_s(strides[last], 2);
            point[d] = ib;
            point[last] = jb;
            // Column `jb + c` of the block: 16 rows' values, one line.
            let mut column = self.address(ti, arg, point);
            let mut columns = vec![];
            for c in 0..LINE {
                if c > 0 {
                    column = self.b.ins().iadd(column, step);
                }
                columns.push(column);
            }
            if let Some(next) = next {
                let ahead = self.next_block_ahead(step, next);
                for &at in &columns {
                    let at = self.b.ins().iadd(at, ahead);
                    self.prefetch_to(prefetch::Hint::T1, at, 0);
                }
            }
            for q in 0..LINE / LANES {
                for k in 0..LINE / LANES {
                    let mut c4 = [self.zero; 4];
                    for (c, v) in c4.iter_mut().enumerate() {
                        let at = columns[(q * LANES) as usize + c];
                        *v = self.b.ins().load(types::F32X4, mem(), at, (k * 16) as i32);
                    }
                    // Rows `ib + 4k + r` at columns `jb + 4q ..`: row-major in the slot.
                    for (r, row) in self.transpose4(c4).into_iter().enumerate() {
                        let at = (k * LANES + r as i64) * ROW_BYTES + q * 16;
                        self.b.ins().stack_store(types::I64, row, slot, at as i32);
                    }
                }
            }
        }
        // Every other access walks the block's rows from its address at row `ib`, column 0,
        // a row's stride further each row.
        let zero = self.zero;
        point[d] = ib;
        point[last] = zero;
        let mut rows_walked = vec![];
        for i in 0..self.k.body.len() {
            let Some(arg) = self.k.body[i].arg() else {
                continue;
            };
            if is_transposing_load(&self.k.body[i]) {
                continue;
            }
            let (strides, _) = self.index[i]
                .clone()
                .expect("indexed instructions have one");
            let size = self.k.args[arg].dtype.size() as i64;
            let step = self
                .b
                .ins()
                .ishl_imm_s(strides[d], size.trailing_zeros() as i64);
            let at = self.b.declare_var(types::I64);
            let start = self.address(i, arg, point);
            self.b.def_var(at, start);
            rows_walked.push((i, at, step));
        }
        let rows = self.b.ins().iconst(types::I64, LINE);
        self.vector = true;
        self.for_loop(zero, rows, BLOCK_ROWS_A_TRIP, &mut |t, i0| {
            for u in 0..BLOCK_ROWS_A_TRIP {
                let ii = t.b.ins().iadd_imm_s(i0, u);
                point[d] = t.b.ins().iadd(ib, ii);
                for &(i, at, _) in &rows_walked {
                    t.bases[i] = Some(t.b.use_var(at));
                }
                t.bases_level = last;
                // Each transposing load's row `ii` in its slot.
                let offset = t.b.ins().imul_imm_s(ii, ROW_BYTES);
                let mut slot_rows = vec![];
                for (ti, slot) in t.block_slots.clone().into_iter().enumerate() {
                    if let Some(slot) = slot {
                        let base = t.b.ins().stack_addr(types::I64, slot, 0);
                        slot_rows.push((ti, t.b.ins().iadd(base, offset)));
                    }
                }
                for q in 0..LINE / LANES {
                    for &(ti, at) in &slot_rows {
                        let v = t.b.ins().load(types::F32X4, mem(), at, (q * 16) as i32);
                        t.given[ti] = Some(v);
                    }
                    point[last] = t.b.ins().iadd_imm_s(jb, q * LANES);
                    let mut v = vals.to_vec();
                    t.row(point, &mut v)?;
                }
                t.given.iter_mut().for_each(|x| *x = None);
                for &(i, at, step) in &rows_walked {
                    let base = t.bases[i].expect("set above");
                    let next = t.b.ins().iadd(base, step);
                    t.b.def_var(at, next);
                }
                t.clear_bases();
            }
            Ok(())
        })?;
        self.vector = false;
        Ok(())
    }

    /// Bytes from a transposing load's line in the block at rows `ib..`, column `jb + c`, to
    /// the line the same column `c` reads in the next row block of the walk: 16 rows on (the
    /// next line of the same input row, 64 bytes), or, in a tile's last row block when more
    /// tiles lie to the right, the first row block of the next tile (`cols` input rows on, back
    /// to the tile's first row). `step` is the load's stride along the columns in bytes;
    /// `next` says which of the two ([`Self::next_rows`]).
    ///
    /// A block's transposing reads are 16 lines 16 input rows apart, so the hardware
    /// prefetchers, which follow runs of nearby lines, miss them; fetching them a row block
    /// ahead (`cols / 16` blocks of work) into L2 (`prefetcht1`; into L1 they only crowd the
    /// lines in use) took `permute_scale` on a Zen 4 from 2.95 to 1.28 ms back to back and
    /// from 3.46 to 2.72 ms with the caches emptied, and left `transpose_add`, at the triad
    /// rate already, where it was (`docs/benchmarks.md`, "Figures behind the code's
    /// constants").
    fn next_block_ahead(&mut self, step: Value, next: &NextRows) -> Value {
        let line = self.b.ins().iconst(types::I64, LINE * 4);
        let right = self.b.ins().imul_imm_s(step, next.cols);
        let right = self.b.ins().isub(right, next.back);
        self.b.ins().select(next.down, line, right)
    }

    /// [`NextRows`] for the row block at `ib` of the tile whose rows start at `first_row`,
    /// whose line-block rows end at `blocks_end` and whose columns end at `cols_end`.
    fn next_rows(
        &mut self,
        ib: Value,
        first_row: Value,
        blocks_end: Value,
        cols_end: Value,
        cols: i64,
    ) -> NextRows {
        let width = self.sizes[self.k.shape.len() - 1];
        let below = self.b.ins().iadd_imm_s(ib, LINE);
        let more_rows = self.b.ins().icmp(IntCC::SignedLessThan, below, blocks_end);
        let last_tile = self
            .b
            .ins()
            .icmp(IntCC::SignedGreaterThanOrEqual, cols_end, width);
        let down = self.b.ins().bor(more_rows, last_tile);
        let back = self.b.ins().isub(ib, first_row);
        let back = self.b.ins().ishl_imm_s(back, 2);
        NextRows { down, back, cols }
    }

    /// The transpose of a 4×4 block held as four f32x4 columns: row `r` of the result is
    /// lane `r` of every column.
    pub(super) fn transpose4(&mut self, c: [Value; 4]) -> [Value; 4] {
        let t0 = self.shuffle32(c[0], c[1], [0, 4, 1, 5]);
        let t1 = self.shuffle32(c[0], c[1], [2, 6, 3, 7]);
        let t2 = self.shuffle32(c[2], c[3], [0, 4, 1, 5]);
        let t3 = self.shuffle32(c[2], c[3], [2, 6, 3, 7]);
        [
            self.shuffle32(t0, t2, [0, 1, 4, 5]),
            self.shuffle32(t0, t2, [2, 3, 6, 7]),
            self.shuffle32(t1, t3, [0, 1, 4, 5]),
            self.shuffle32(t1, t3, [2, 3, 6, 7]),
        ]
    }

    /// Lanes of `a` (0-3) and `b` (4-7) picked into an f32x4.
    pub(super) fn shuffle32(&mut self, a: Value, b: Value, lanes: [u8; 4]) -> Value {
        let a = self.b.ins().bitcast(types::I8X16, little(), a);
        let b = self.b.ins().bitcast(types::I8X16, little(), b);
        let mask: Vec<u8> = lanes
            .iter()
            .flat_map(|&l| (0..4).map(move |k| 4 * l + k))
            .collect();
        let mask = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let picked = self.b.ins().shuffle(a, b, mask);
        self.b.ins().bitcast(types::F32X4, little(), picked)
    }
}
