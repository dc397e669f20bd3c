//! Metrics per node (issue 34, docs/cluster.md "Operations"), on three hosts each in a
//! network namespace of its own: every member's `/metrics` labels each of its series with
//! its node name (scraped from two members over HTTP, parsed by a real OpenMetrics parser:
//! the sandboxes each reports are the ones etcd binds to it), and `cluster status -o json`
//! gives each member's capacity, sandboxes and load.

use super::hosts::host_of_blocking;
use cleanroom_e2e::cluster_hosts::{Host, Lab, OPS};
use cleanroom_e2e::*;
use std::collections::BTreeMap;
use std::time::Duration;

/// prometheus_client's strict OpenMetrics parser: every sample as `name{k="v",…}` (labels
/// sorted) → value.
const PARSE: &str = r#"
import sys, json
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    for s in fam.samples:
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(s.labels.items()))
        out[f"{s.name}{{{labels}}}"] = s.value
print(json.dumps(out))
"#;

fn scrape(h: &Host) -> BTreeMap<String, f64> {
    let r = curl(&h.addr(), "GET", "/metrics", Some(OPS), None);
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(&python(PARSE, &r.body)).expect("parser output")
}

/// Ready sandboxes a scrape reports (summed over runtimes).
fn ready(m: &BTreeMap<String, f64>) -> f64 {
    m.iter()
        .filter(|(k, _)| k.starts_with("cleanroom_sandboxes{") && k.contains("status=\"ready\""))
        .map(|(_, v)| v)
        .sum()
}

fn count(v: &serde_json::Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_str().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

#[test]
fn each_member_labels_its_metrics_with_its_node_and_status_shows_each_one_s_load() {
    let lab = Lab::start(&["a", "b", "c"]);
    let ids: Vec<String> = (0..4).map(|_| lab.host("a").create()).collect();
    let mut on: BTreeMap<String, usize> = BTreeMap::new();
    for id in &ids {
        *on.entry(host_of_blocking(&lab.etcd, id).expect("bound"))
            .or_default() += 1;
    }
    for name in ["a", "b"] {
        let m = scrape(lab.host(name));
        assert!(!m.is_empty());
        let label = format!("node=\"{name}\"");
        let unlabelled: Vec<&String> = m.keys().filter(|k| !k.contains(&label)).collect();
        assert!(unlabelled.is_empty(), "{name}: {unlabelled:?}");
        let want = on.get(name).copied().unwrap_or(0) as f64;
        assert_eq!(ready(&m), want, "{name} holds {want}: {m:?}");
    }
    // cluster status: each member's capacity, sandboxes (as last reported) and load.
    let total = ids.len() as u64;
    let mut v = serde_json::Value::Null;
    let reported = eventually(Duration::from_secs(20), || {
        let o = lab.host("c").run(OPS, &["cluster", "status", "-o", "json"]);
        v = serde_json::from_slice(&o.stdout).unwrap_or_default();
        let ms = v["members"].as_array().cloned().unwrap_or_default();
        ms.len() == 3
            && ms.iter().map(|m| count(&m["sandboxes"])).sum::<u64>() == total
            && ms.iter().all(|m| {
                let n = m["name"].as_str().unwrap_or_default();
                count(&m["sandboxes"]) == on.get(n).copied().unwrap_or(0) as u64
            })
    });
    assert!(reported, "{v}");
    let here: f64 = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    for m in v["members"].as_array().expect("members") {
        assert!(count(&m["capacity"]) > 0, "{m}");
        let load = m
            .get("loadAverage")
            .or_else(|| m.get("load_average"))
            .and_then(|l| l.as_f64());
        // The hosts share this machine's kernel: a loaded machine reports a load.
        if here >= 1.0 {
            let l = load.unwrap_or_else(|| panic!("no load in {m}"));
            assert!(l > 0.0 && (l * 2.0).fract() == 0.0, "{m}");
        }
    }
}
