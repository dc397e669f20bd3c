//! Where a new sandbox goes: among the live members that offer the runtime it asks for and
//! have room, two picked at random, the one with more free capacity (the
//! power-of-two-choices rule: nearly as even as asking everyone, without a herd on the
//! emptiest host when many front doors place at once). A drained member (`cleanroom node
//! drain`) takes nothing new. Pure: the caller gives the member records (and the placements
//! it made itself since they were last reported).

use crate::MemberInfo;

/// Free slots of a member: `capacity - sandboxes` (`capacity` 0: no fixed cap).
pub fn free(m: &MemberInfo, recent: u64) -> u64 {
    let used = m.sandboxes.saturating_add(recent);
    if m.capacity == 0 {
        u64::MAX / 2 - used.min(u64::MAX / 4)
    } else {
        m.capacity.saturating_sub(used)
    }
}

/// Can `m` take a sandbox of `runtime` (`None`: the member's default)? Never while it is
/// drained.
pub fn fits(m: &MemberInfo, runtime: Option<&str>, recent: u64) -> bool {
    !m.draining
        && !m.peer.is_empty()
        && runtime.is_none_or(|rt| m.runtimes.iter().any(|r| r == rt))
        && free(m, recent) > 0
}

/// Choose a member for a sandbox of `runtime`. `recent(name)` is how many placements this
/// front door made on that member since its record was last refreshed; `random` gives
/// random numbers (two are drawn). `None`: no member fits.
pub fn choose<'a>(
    members: &'a [MemberInfo],
    runtime: Option<&str>,
    recent: impl Fn(&str) -> u64,
    mut random: impl FnMut() -> u64,
) -> Option<&'a MemberInfo> {
    let fit: Vec<&MemberInfo> = members
        .iter()
        .filter(|m| fits(m, runtime, recent(&m.name)))
        .collect();
    match fit.len() {
        0 => None,
        1 => Some(fit[0]),
        n => {
            let i = (random() % n as u64) as usize;
            let mut j = (random() % (n as u64 - 1)) as usize;
            if j >= i {
                j += 1;
            }
            let (a, b) = (fit[i], fit[j]);
            if free(b, recent(&b.name)) > free(a, recent(&a.name)) {
                Some(b)
            } else {
                Some(a)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, runtimes: &[&str], capacity: u64, sandboxes: u64) -> MemberInfo {
        MemberInfo {
            name: name.into(),
            peer: format!("https://{name}:1"),
            runtimes: runtimes.iter().map(|s| s.to_string()).collect(),
            capacity,
            sandboxes,
            ..Default::default()
        }
    }

    #[test]
    fn runtime_and_room_decide_then_the_freer_of_two() {
        let ms = [
            m("a", &["linux"], 10, 10),
            m("b", &["linux", "gvisor"], 10, 9),
            m("c", &["linux"], 10, 2),
        ];
        let mut seq = [0u64, 0, 1, 0, 2, 1].into_iter().cycle();
        // gvisor: only b offers it.
        let got = choose(&ms, Some("gvisor"), |_| 0, || seq.next().unwrap_or(0));
        assert_eq!(got.map(|m| m.name.as_str()), Some("b"));
        // a is full: never chosen; between b and c, c (more room).
        for _ in 0..20 {
            let got = choose(&ms, Some("linux"), |_| 0, || seq.next().unwrap_or(0)).unwrap();
            assert_ne!(got.name, "a");
        }
        let pick = choose(&ms, None, |_| 0, {
            let mut s = [1u64, 1].into_iter();
            move || s.next().unwrap_or(0)
        });
        assert_eq!(pick.map(|m| m.name.as_str()), Some("c"));
        // Recent placements count against a member's room.
        let pick = choose(&ms, None, |n| if n == "c" { 8 } else { 0 }, {
            let mut s = [1u64, 1].into_iter();
            move || s.next().unwrap_or(0)
        });
        assert_eq!(pick.map(|m| m.name.as_str()), Some("b"));
        // Nothing fits: none.
        assert!(choose(&ms, Some("kvm"), |_| 0, || 0).is_none());
        // A drained member is never chosen, however free.
        let mut drained = ms.clone();
        drained[2].draining = true;
        for _ in 0..20 {
            let got = choose(&drained, None, |_| 0, || seq.next().unwrap_or(0)).unwrap();
            assert_eq!(got.name, "b");
        }
        drained[1].draining = true;
        assert!(choose(&drained, None, |_| 0, || 0).is_none());
        // A member without a member link (an older record) is never chosen.
        let mut old = m("d", &["linux"], 0, 0);
        old.peer.clear();
        assert!(choose(&[old], None, |_| 0, || 0).is_none());
    }
}
