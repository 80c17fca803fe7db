//! Tiled walks of elementwise kernels whose accesses disagree on the fastest dim (a transpose,
//! a permute-copy): blocks of rows × columns that keep every touched line in cache, and 4×4
//! blocks of transposing loads transposed in registers.

use super::*;

/// Rows and columns of a block of a tiled walk ([`Translator::tiled`]). A row of a block is
/// one cache line of f32, so the contiguous accesses use whole lines per visit; the
/// transposing access reuses each of its 16 lines across the block's rows. (Measured on
/// `transpose_add`: 16 columns beat 8 and 32 by 1.5-2x; rows matter less.)
const TILE: (i64, i64) = (64, 16);
/// The block of a tiled walk whose transposing loads are read four rows at a time
/// ([`Translator::quad`]): 64 rows × 64 columns. Each of a block's columns takes one line of
/// such a load per 16 rows, so its lines stay in cache across the rows, and each row of the
/// contiguous accesses is four whole lines, which a streaming variant writes whole
/// ([`crate::cpu::streaming_candidate`]). (Measured on `transpose_add`, alternating
/// `smelt bench` runs on a 2-core Xeon with a 480 MiB L3, streamed: 18.1–18.6 ms against
/// 18–30 ms for the earlier 512 × 256 blocks streamed and 30–35 ms unstreamed; 32 × 64,
/// 128 × 64 and 32 × 32 between them or noisier; `permute_scale` unchanged.)
const QUAD_TILE: (i64, i64) = (64, 64);
/// Whether `instr` is a load whose innermost stride is neither 0 nor 1 while its stride along
/// the dim outside it is 1: in a tiled walk, four rows of it are read as four contiguous
/// column vectors and transposed ([`Translator::quad`]). Part of the structure key.
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
        | Instr::Reduce { .. } => false,
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
            instr
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

/// The columns of a tiled kernel's blocks in SIMD code of f32 values: [`QUAD_TILE`]'s where
/// its transposing loads are read in 4×4 blocks, else [`TILE`]'s.
pub(crate) fn tile_columns(k: &Kernel) -> usize {
    (if transposes_f32(k) {
        QUAD_TILE.1
    } else {
        TILE.1
    }) as usize
}

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
        let (rows, cols) = if quads { QUAD_TILE } else { TILE };
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
                    let split = t.whole_steps(i0, i1, LANES);
                    t.for_loop(i0, split, LANES, &mut |t, i| t.quad(i, j0, j1, point, vals))?;
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
        self.for_loop(j0, split, LANES, &mut |t, j| {
            t.enter_rows(&at[0], point, d);
            for ti in 0..t.k.body.len() {
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
                t.transposed[ti] = Some(t.transpose4(columns));
            }
            point[last] = j;
            for (r, row) in at.iter().enumerate() {
                t.enter_rows(row, point, d);
                t.quad_row = Some(r);
                let mut v = vals.to_vec();
                t.row(point, &mut v)?;
            }
            t.quad_row = None;
            t.transposed.iter_mut().for_each(|x| *x = None);
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
