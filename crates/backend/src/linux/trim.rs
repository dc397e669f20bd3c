//! Give back the page tables an idle shim or pid 1 holds for code it no longer runs.
//!
//! Every sandbox has two long-lived processes of ours (the shim and pid 1), both forks of
//! the zygote. During setup they execute code spread over the whole 26 MB text and 7 MB
//! read-only data of the binary; each 2 MiB stretch they touch costs a 4 KiB page-table
//! page, ~17 per process (~140 KiB per sandbox, measured with `VmPTE`), kept for the
//! sandbox's whole life although an idle sandbox runs almost none of that code again.
//!
//! `madvise(MADV_DONTNEED)` on a private file mapping that holds no anonymous
//! (copy-on-write) page only drops the page-table entries: the pages stay in the page
//! cache, shared, and the next access maps them again (a minor fault). With
//! `CONFIG_PT_RECLAIM` (Linux >= 6.14; x86-64) the kernel then also frees the emptied
//! page-table pages. Without it the call still succeeds and frees nothing.
//!
//! Which mappings qualify is decided once, in the zygote ([`prepare`]), from its
//! `/proc/self/smaps`: private, non-writable, file-backed mappings with `Anonymous: 0`
//! (the relocated RELRO segment is read-only but anonymous: it is never touched). The
//! shim and pid 1 inherit that plan with their address space; before each zap
//! ([`idle`]) the mapping is checked to be still the same (start, end, permissions,
//! offset, device, inode in `/proc/self/maps`), so nothing that was remapped since is
//! ever discarded. A non-writable private mapping cannot gain anonymous pages in between
//! (no `mprotect` of ours; ptrace and `/proc/PID/mem` writes are out of reach: the
//! processes are not dumpable).
//!
//! Not done: `malloc_trim(0)`. It was measured to cost memory here: walking the
//! allocator's free lists writes to heap pages the process still shares copy-on-write
//! with the zygote, so each process got private copies (+36 KiB per sandbox).
//!
//! This is a memory optimisation only: when `/proc` cannot be read or the kernel refuses,
//! nothing is trimmed and nothing else changes (no security decision depends on it).

use std::sync::OnceLock;

/// One mapping as `/proc/self/maps` names it (everything but the path).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mapping {
    start: usize,
    end: usize,
    key: String,
}

static PLAN: OnceLock<Vec<Mapping>> = OnceLock::new();

/// Parse a maps/smaps header line: `start-end perms offset dev inode [path]`.
fn header(line: &str) -> Option<(Mapping, String, u64)> {
    let mut parts = line.split_whitespace();
    let range = parts.next()?;
    let perms = parts.next()?.to_string();
    let offset = parts.next()?;
    let dev = parts.next()?;
    let inode: u64 = parts.next()?.parse().ok()?;
    let (start, end) = range.split_once('-')?;
    let start = usize::from_str_radix(start, 16).ok()?;
    let end = usize::from_str_radix(end, 16).ok()?;
    if perms.len() != 4 || end <= start {
        return None;
    }
    let key = format!("{range} {perms} {offset} {dev} {inode}");
    Some((Mapping { start, end, key }, perms, inode))
}

/// The mappings of an smaps text that are safe to zap: private, not writable,
/// file-backed, no anonymous page.
fn plan_from_smaps(smaps: &str) -> Vec<Mapping> {
    let mut out = Vec::new();
    let mut cur: Option<(Mapping, bool)> = None;
    let mut finish = |cur: &mut Option<(Mapping, bool)>| {
        if let Some((m, true)) = cur.take() {
            out.push(m);
        }
    };
    for line in smaps.lines() {
        if let Some((m, perms, inode)) = header(line) {
            finish(&mut cur);
            let b = perms.as_bytes();
            let eligible = b[0] == b'r' && b[1] == b'-' && b[3] == b'p' && inode != 0;
            cur = Some((m, eligible));
        } else if let Some(rest) = line.strip_prefix("Anonymous:") {
            let kib: u64 = rest
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse()
                .unwrap_or(u64::MAX);
            if kib != 0 {
                if let Some((_, ok)) = cur.as_mut() {
                    *ok = false;
                }
            }
        }
    }
    finish(&mut cur);
    out
}

/// Keep only the planned mappings `/proc/self/maps` still shows exactly as planned.
fn still_mapped<'a>(plan: &'a [Mapping], maps: &str) -> Vec<&'a Mapping> {
    let now: std::collections::HashSet<String> = maps
        .lines()
        .filter_map(|l| header(l).map(|(m, _, _)| m.key))
        .collect();
    plan.iter().filter(|m| now.contains(&m.key)).collect()
}

/// Decide, once, which mappings a fork of this process may zap when idle. Called by the
/// zygote before it forks anything; later calls are no-ops.
pub fn prepare() {
    PLAN.get_or_init(|| {
        std::fs::read_to_string("/proc/self/smaps")
            .map(|s| plan_from_smaps(&s))
            .unwrap_or_default()
    });
}

/// Drop the page tables of the planned, unchanged mappings. Returns how many mappings
/// were zapped (0 when there is no plan, `/proc` is unreadable, or the kernel refused).
pub fn idle() -> usize {
    let Some(plan) = PLAN.get() else {
        return 0;
    };
    let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else {
        return 0;
    };
    let mut done = 0;
    for m in still_mapped(plan, &maps) {
        // SAFETY: the range is exactly one current mapping of this process (checked just
        // above against /proc/self/maps, single-threaded, nothing unmaps in between): a
        // private, read-only, file-backed mapping without anonymous pages, so dropping its
        // entries loses no data — the next access maps the same file pages again.
        let rc = unsafe {
            libc::madvise(
                m.start as *mut libc::c_void,
                m.end - m.start,
                libc::MADV_DONTNEED,
            )
        };
        if rc == 0 {
            done += 1;
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
55d000000000-55d000700000 r--p 00000000 fd:01 1234 /bin/cleanroom
Size:               7168 kB
Anonymous:             0 kB
55d000700000-55d002000000 r-xp 00700000 fd:01 1234 /bin/cleanroom
Anonymous:             0 kB
55d002000000-55d0020b4000 r--p 02000000 fd:01 1234 /bin/cleanroom
Anonymous:           720 kB
55d0020b4000-55d0020be000 rw-p 020b4000 fd:01 1234 /bin/cleanroom
Anonymous:            40 kB
7f0000000000-7f0000021000 rw-p 00000000 00:00 0 [heap]
Anonymous:            28 kB
7f0000100000-7f0000102000 r-xp 00000000 00:00 0 [vdso]
Anonymous:             0 kB
7f0000200000-7f0000300000 r--s 00000000 fd:01 99 /some/shared
Anonymous:             0 kB
";

    #[test]
    fn only_private_read_only_file_mappings_without_anonymous_pages_are_planned() {
        let plan = plan_from_smaps(SMAPS);
        let starts: Vec<usize> = plan.iter().map(|m| m.start).collect();
        // rodata and text; not RELRO (anonymous), data (writable), heap, vdso, shared.
        assert_eq!(starts, vec![0x55d0_0000_0000, 0x55d0_0070_0000]);
    }

    #[test]
    fn a_mapping_that_changed_is_not_zapped() {
        let plan = plan_from_smaps(SMAPS);
        // The text mapping is now something else at the same start (other inode).
        let maps = "\
55d000000000-55d000700000 r--p 00000000 fd:01 1234 /bin/cleanroom
55d000700000-55d002000000 r-xp 00700000 fd:01 4321 /other
";
        let left = still_mapped(&plan, maps);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].start, 0x55d0_0000_0000);
        assert!(still_mapped(&plan, "").is_empty());
    }

    #[test]
    fn unparsable_anonymous_counts_disqualify() {
        let smaps = "\
55d000000000-55d000700000 r--p 00000000 fd:01 1234 /bin/cleanroom
Anonymous:           junk
";
        assert!(plan_from_smaps(smaps).is_empty());
    }

    #[test]
    fn zapping_this_process_keeps_its_code_working() {
        // The test binary itself: plan, zap, and keep running code and reading rodata
        // from the zapped mappings (they fault back in from the page cache).
        let plan = plan_from_smaps(&std::fs::read_to_string("/proc/self/smaps").unwrap());
        assert!(
            !plan.is_empty(),
            "the test binary has read-only file mappings"
        );
        let _ = PLAN.set(plan);
        let before: String = format!("{:?}", SMAPS.lines().count());
        assert!(idle() > 0, "at least one mapping zapped");
        assert_eq!(format!("{:?}", SMAPS.lines().count()), before);
        assert_eq!(
            plan_from_smaps(SMAPS).len(),
            2,
            "code and data still intact"
        );
    }
}
