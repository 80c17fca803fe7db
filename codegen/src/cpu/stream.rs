//! Streaming (non-temporal) vector stores in JIT code, which cranelift 0.135 cannot express
//! either (no such store in CLIF).
//!
//! A kernel's output that is far larger than the caches is written to memory whatever the
//! stores do, and an ordinary store first reads each line it writes (the write-allocate
//! transfer, a third more traffic for a copy, half again for `x → f(x)`). A streaming store
//! (`movntps`) writes whole lines without reading them. As with prefetches (`prefetch.rs`), a
//! kernel compiled for streaming marks each such store with its own trap code ([`flags`]);
//! cranelift records where each starts, and [`patch`] rewrites `movups [mem], xmm` (legacy
//! `REX? 0F 11 /r`, or VEX `vmovups`) in place into `movntps` (`0F 2B /r`): the same prefixes,
//! addressing bytes and length. The kernel ends with a fence, so its writes are visible to
//! whoever reads the output next.
//!
//! `movntps` faults on an address that is not a multiple of 16, where `movups` does not: the
//! runtime launches a streaming variant only when every vector store of the kernel is aligned
//! (`runtime/src/cpu.rs`, `streams_aligned`), and the JIT never defines code whose stores it
//! could not rewrite.

use cranelift_codegen::ir::{MemFlagsData, TrapCode};

/// The trap code that marks a streaming store (distinct from the prefetch hints' 42 and 44,
/// `prefetch::Hint::trap`; a test checks).
pub(crate) const STREAM: TrapCode = TrapCode::unwrap_user(43);

/// The flags of a streaming store.
pub(crate) fn flags() -> MemFlagsData {
    MemFlagsData::new().with_trap_code(Some(STREAM))
}

/// Rewrites the 16-byte float stores starting at `sites` in `code` into `movntps` to the same
/// address. Fails, naming the site, when one is not such a store (then nothing may run).
pub(crate) fn patch(code: &mut [u8], sites: &[usize]) -> Result<(), String> {
    for &site in sites {
        let at = |i: usize| code.get(site + i).copied();
        // Where the opcode byte is, for the encodings of `movups m128, xmm` cranelift emits.
        let opcode = match at(0) {
            // VEX2: C5 [R vvvv L pp]; the map is 0F. L = 0 (128 bits), pp = 00 (no prefix).
            Some(0xC5) => at(1).filter(|b| b & 0b111 == 0).map(|_| 2),
            // VEX3: C4 [R X B mmmmm] [W vvvv L pp]; map 00001 is 0F.
            Some(0xC4) => match (at(1), at(2)) {
                (Some(m), Some(p)) if m & 0b1_1111 == 1 && p & 0b111 == 0 => Some(3),
                _ => None,
            },
            // Legacy: REX? 0F 11.
            Some(b) if b & 0xF0 == 0x40 && at(1) == Some(0x0F) => Some(2),
            Some(0x0F) => Some(1),
            _ => None,
        };
        let modrm = opcode.and_then(|o| at(o + 1));
        match (opcode, opcode.and_then(at), modrm) {
            // mod 11 would be a register destination.
            (Some(o), Some(0x11), Some(modrm)) if modrm >> 6 != 0b11 => code[site + o] = 0x2B,
            _ => {
                return Err(format!(
                    "streaming store site at byte {site} is not a 16-byte float store: {:02x?}",
                    super::prefetch::bytes_at(code, site)
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::patch;

    /// Stores as an assembler encodes `movups`/`vmovups` to memory, each with the `movntps`
    /// GNU as assembles for the same operands.
    #[test]
    fn float_stores_become_streaming_stores_to_the_same_address() {
        let cases: [(&[u8], &[u8]); 5] = [
            // vmovups %xmm1,(%rax) -> vmovntps %xmm1,(%rax)
            (&[0xc5, 0xf8, 0x11, 0x08], &[0xc5, 0xf8, 0x2b, 0x08]),
            // vmovups %xmm3,0x10(%rdx,%rcx,4) -> vmovntps
            (
                &[0xc5, 0xf8, 0x11, 0x5c, 0x8a, 0x10],
                &[0xc5, 0xf8, 0x2b, 0x5c, 0x8a, 0x10],
            ),
            // vmovups %xmm9,(%r8,%r10,4) -> vmovntps (three-byte VEX)
            (
                &[0xc4, 0x01, 0x78, 0x11, 0x0c, 0x90],
                &[0xc4, 0x01, 0x78, 0x2b, 0x0c, 0x90],
            ),
            // movups %xmm0,(%rdi) -> movntps %xmm0,(%rdi)
            (&[0x0f, 0x11, 0x07], &[0x0f, 0x2b, 0x07]),
            // movups %xmm8,0x40(%r9) -> movntps %xmm8,0x40(%r9)
            (
                &[0x45, 0x0f, 0x11, 0x41, 0x40],
                &[0x45, 0x0f, 0x2b, 0x41, 0x40],
            ),
        ];
        for (store, want) in cases {
            let mut code = [&[0x90, 0xc3][..], store, &[0xc3]].concat();
            patch(&mut code, &[2]).unwrap();
            assert_eq!(code, [&[0x90, 0xc3][..], want, &[0xc3]].concat());
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for (code, site) in [
            // vmovups %xmm1,%xmm0 (a register destination)
            (vec![0xc5, 0xf8, 0x11, 0xc8], 0),
            // vmovupd (66 prefix: pp = 01), vmovups of 256 bits (L = 1)
            (vec![0xc5, 0xf9, 0x11, 0x08], 0),
            (vec![0xc5, 0xfc, 0x11, 0x08], 0),
            // vmovdqu (F3 0F 7F), a load (0F 10), a plain mov
            (vec![0xc5, 0xfa, 0x7f, 0x08], 0),
            (vec![0x0f, 0x10, 0x07], 0),
            (vec![0x48, 0x89, 0x08], 0),
            // cut short, past the end
            (vec![0xc5, 0xf8, 0x11], 0),
            (vec![0x90], 3),
        ] {
            let mut patched = code.clone();
            assert!(
                patch(&mut patched, &[site]).is_err(),
                "{code:02x?} at {site}"
            );
            assert_eq!(patched, code);
        }
    }
}
