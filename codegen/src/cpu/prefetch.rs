//! Software prefetches in JIT code, which cranelift 0.135 cannot express (no prefetch
//! instruction in CLIF; wasmtime issue #13075 asks for one).
//!
//! A kernel asks for a prefetch with a one-byte load whose result nothing reads, flagged with
//! its own trap code ([`flags`]): a load that may trap is never removed or merged, and cranelift
//! records where every such instruction starts in the machine code. After compiling, [`patch`]
//! rewrites each of those loads (`movzx r, byte [addr]`, `REX? 0F B6 /r`) in place into
//! `prefetcht0 [addr]` or `prefetcht1 [addr]` (`REX? 0F 18 /1` or `/2`, [`Hint`]): the same
//! prefix, addressing bytes and length, so no other instruction moves. A prefetch never
//! faults, so it may name an address past the end of a buffer; the JIT therefore never runs a
//! kernel whose patch failed (it compiles the kernel again without prefetches).
//!
//! Why not a load that touches the line: a load that misses holds its place in the reorder
//! buffer until the line arrives, so touches far ahead stall the loop; a prefetch retires at
//! once; touching the same bytes with loads gained nothing (`docs/benchmarks.md`, "Figures
//! behind the code's constants").

use cranelift_codegen::ir::{MemFlagsData, TrapCode};

/// The cache level a prefetch fills, each marked by a trap code of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hint {
    /// `prefetcht0`: every level, for lines used soon after (a streamed load's next lines).
    T0,
    /// `prefetcht1`: L2 and outward, for lines used many cache lines' worth of work later
    /// (the next row block of a tiled transpose, `translate/tiles.rs`), which would only
    /// crowd the L1 data cache meanwhile.
    T1,
}

impl Hint {
    /// Both hints, in the order the JIT patches them.
    pub(crate) const ALL: [Hint; 2] = [Hint::T0, Hint::T1];

    /// The trap code that marks a prefetch load with this hint (each distinct from every
    /// other marker the JIT patches: `stream::STREAM` is 43).
    pub(crate) fn trap(self) -> TrapCode {
        match self {
            Hint::T0 => TrapCode::unwrap_user(42),
            Hint::T1 => TrapCode::unwrap_user(44),
        }
    }

    /// The `reg` field of `0F 18 /r` that selects this hint.
    fn reg(self) -> u8 {
        match self {
            Hint::T0 => 1,
            Hint::T1 => 2,
        }
    }
}

/// How far ahead of a streamed load the prefetch reads, in bytes, 0 for no such prefetch: the
/// host's tuning (`host::Tuning::prefetch_ahead`: 32 cache lines where that gained, 2 KiB with
/// 64-byte lines; none on AMD CPUs; `SMELT_PREFETCH_AHEAD` overrides it). In C on the machines
/// measured 1, 2 and 4 KiB all gained the same; much nearer than 1 KiB gains less.
pub(crate) fn ahead() -> i32 {
    crate::cpu::host::tuning().prefetch_ahead
}

/// The flags of a prefetch load with `hint`.
pub(crate) fn flags(hint: Hint) -> MemFlagsData {
    MemFlagsData::new().with_trap_code(Some(hint.trap()))
}

/// Rewrites the one-byte loads starting at `sites` in `code` into prefetches of the same
/// address with `hint`. Fails, naming the site, when one is not such a load (then nothing may
/// run).
pub(crate) fn patch(code: &mut [u8], sites: &[usize], hint: Hint) -> Result<(), String> {
    for &site in sites {
        let at = |i: usize| code.get(site + i).copied();
        let rex = at(0).filter(|b| b & 0xF0 == 0x40);
        let op = usize::from(rex.is_some());
        let modrm = at(op + 2);
        match (at(op), at(op + 1), modrm) {
            // movzx r32/r64, byte [mem]: mod 11 would be a register operand.
            (Some(0x0F), Some(0xB6), Some(modrm)) if modrm >> 6 != 0b11 => {
                if let Some(rex) = rex {
                    // Keep X and B (the address's index and base registers); W and R (the
                    // destination register) mean nothing to a prefetch.
                    code[site] = 0x40 | (rex & 0b0011);
                }
                code[site + op + 1] = 0x18;
                code[site + op + 2] = (modrm & 0b1100_0111) | (hint.reg() << 3);
            }
            _ => {
                return Err(format!(
                    "prefetch site at byte {site} is not a byte load: {:02x?}",
                    bytes_at(code, site)
                ));
            }
        }
    }
    Ok(())
}

/// Up to eight bytes of `code` from `site` (none past its end), for an error naming a site
/// that is not the instruction a patch expects.
pub(crate) fn bytes_at(code: &[u8], site: usize) -> &[u8] {
    let len = code.len().min(site.saturating_add(8));
    &code[site.min(len)..len]
}

#[cfg(test)]
mod tests {
    use super::{Hint, patch};

    /// Byte loads as cranelift emits them, each with the `prefetcht0` that GNU as assembles
    /// for the same address (with a REX prefix of 0x40 kept where the load had one that only
    /// named its destination or operand size).
    #[test]
    fn byte_loads_become_prefetches_of_the_same_address() {
        let cases: [(&[u8], &[u8]); 5] = [
            // movzbq (%rdx,%r13,4),%r14 -> prefetcht0 (%rdx,%r13,4)
            (
                &[0x4e, 0x0f, 0xb6, 0x34, 0xaa],
                &[0x42, 0x0f, 0x18, 0x0c, 0xaa],
            ),
            // movzbl 0x800(%rax),%ecx -> prefetcht0 0x800(%rax)
            (
                &[0x0f, 0xb6, 0x88, 0x00, 0x08, 0x00, 0x00],
                &[0x0f, 0x18, 0x88, 0x00, 0x08, 0x00, 0x00],
            ),
            // movzbq 0x800(%r9,%rbx,1),%r11 -> prefetcht0 0x800(%r9,%rbx,1)
            (
                &[0x4d, 0x0f, 0xb6, 0x9c, 0x19, 0x00, 0x08, 0x00, 0x00],
                &[0x41, 0x0f, 0x18, 0x8c, 0x19, 0x00, 0x08, 0x00, 0x00],
            ),
            // movzbl -8(%r12),%eax -> prefetcht0 -8(%r12)
            (
                &[0x41, 0x0f, 0xb6, 0x44, 0x24, 0xf8],
                &[0x41, 0x0f, 0x18, 0x4c, 0x24, 0xf8],
            ),
            // movzbq (%rax),%rcx -> prefetcht0 (%rax), REX.W dropped to a plain 0x40
            (&[0x48, 0x0f, 0xb6, 0x08], &[0x40, 0x0f, 0x18, 0x08]),
        ];
        for (load, want) in cases {
            // Between other bytes, which must not change.
            let mut code = [&[0x90, 0xc3][..], load, &[0xc3]].concat();
            patch(&mut code, &[2], Hint::T0).unwrap();
            assert_eq!(code, [&[0x90, 0xc3][..], want, &[0xc3]].concat());
            // The T1 hint differs in the reg field alone (/2 for /1).
            let mut code = [&[0x90, 0xc3][..], load, &[0xc3]].concat();
            patch(&mut code, &[2], Hint::T1).unwrap();
            let mut t1 = want.to_vec();
            let modrm = 1 + want.iter().position(|&b| b == 0x18).expect("the opcode");
            t1[modrm] = (t1[modrm] & 0b1100_0111) | (2 << 3);
            assert_eq!(code, [&[0x90, 0xc3][..], &t1[..], &[0xc3]].concat());
        }
    }

    #[test]
    fn every_marker_is_its_own_trap_code() {
        let codes = [Hint::T0.trap(), Hint::T1.trap(), crate::cpu::stream::STREAM];
        for (i, a) in codes.iter().enumerate() {
            assert!(codes[i + 1..].iter().all(|b| b != a), "{codes:?}");
        }
    }

    #[test]
    fn anything_else_is_refused() {
        // A register operand, another opcode, a site past the end.
        for (code, site) in [
            (vec![0x0f, 0xb6, 0xc1], 0),
            (vec![0x48, 0x8b, 0x08], 0),
            (vec![0x0f, 0xb6], 0),
            (vec![0x90], 3),
        ] {
            let mut patched = code.clone();
            assert!(
                patch(&mut patched, &[site], Hint::T0).is_err(),
                "{code:02x?} at {site}"
            );
            assert_eq!(patched, code);
        }
    }
}
