//! What the built `cleanroom` binary is, checked on the file itself: a static
//! position-independent executable (no interpreter, loaded at a random address: the
//! server's code keeps ASLR) whose start-up relocations are packed (DT_RELR).
//!
//! Why a test: each property was a measured decision (docs/performance.md). A non-PIE
//! build starts ~0.6 ms faster but puts the root server's code at a fixed address, and a
//! build without `-z pack-relative-relocs` reads 1 MiB of relocations at every start.
//! Either would otherwise come back silently through a changed flag.

const PT_INTERP: u32 = 3;
const PT_DYNAMIC: u32 = 2;
const ET_DYN: u16 = 3;
const DT_NULL: u64 = 0;
const DT_RELASZ: u64 = 8;
const DT_FLAGS_1: u64 = 0x6fff_fffb;
const DT_RELR: u64 = 36;
const DF_1_PIE: u64 = 0x0800_0000;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(b[at..at + 2].try_into().expect("2 bytes"))
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// The ELF type, the program header types, and the dynamic section's (tag, value) pairs.
fn parse(elf: &[u8]) -> (u16, Vec<u32>, Vec<(u64, u64)>) {
    assert_eq!(&elf[..4], b"\x7fELF", "not an ELF file");
    assert_eq!(elf[4], 2, "not a 64-bit ELF");
    assert_eq!(elf[5], 1, "not little-endian");
    let e_type = u16_at(elf, 16);
    let phoff = u64_at(elf, 32) as usize;
    let phentsize = u16_at(elf, 54) as usize;
    let phnum = u16_at(elf, 56) as usize;
    let mut types = Vec::new();
    let mut dynamic = Vec::new();
    for i in 0..phnum {
        let ph = phoff + i * phentsize;
        let p_type = u32_at(elf, ph);
        types.push(p_type);
        if p_type == PT_DYNAMIC {
            let (off, size) = (u64_at(elf, ph + 8) as usize, u64_at(elf, ph + 32) as usize);
            for e in (off..off + size).step_by(16) {
                let tag = u64_at(elf, e);
                if tag == DT_NULL {
                    break;
                }
                dynamic.push((tag, u64_at(elf, e + 8)));
            }
        }
    }
    (e_type, types, dynamic)
}

#[test]
fn the_binary_is_a_static_pie_with_packed_relocations() {
    let elf = std::fs::read(cleanroom_e2e::BIN).expect("read the binary");
    let (e_type, types, dynamic) = parse(&elf);
    let tag = |t: u64| dynamic.iter().find(|(k, _)| *k == t).map(|(_, v)| *v);
    assert!(
        !types.contains(&PT_INTERP),
        "dynamically linked (has an interpreter)"
    );
    assert_eq!(
        e_type, ET_DYN,
        "not position-independent: the server would lose ASLR"
    );
    assert!(
        tag(DT_FLAGS_1).is_some_and(|f| f & DF_1_PIE != 0),
        "DF_1_PIE missing: {dynamic:x?}"
    );
    assert!(
        tag(DT_RELR).is_some(),
        "relative relocations not packed (no DT_RELR)"
    );
    let rela = tag(DT_RELASZ).unwrap_or(0);
    assert!(
        rela < 64 * 1024,
        "{rela} bytes of RELA relocations left to apply at every start"
    );
}
