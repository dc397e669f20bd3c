//! What `exec` says about mediated registries (issue: silent refusals): a packument narrowed
//! to the lockfile is a warning (npm itself only says `notarget`), npm's own audit and
//! update check are refused without a warning each time, and an allowed registry upstream
//! that cannot be reached is a warning too, not only an event.

use super::*;

#[test]
fn exec_warns_of_hidden_versions_and_dead_upstreams_but_not_of_npm_housekeeping() {
    let t = setup();
    let v = &t.verdaccio;
    let pad = v.publish("left-pad", "1.0.0", "pad-1.0.0");
    v.publish("left-pad", "1.1.0", "pad-1.1.0");
    let r = repo(t.front.port, &[("left-pad", "1.0.0", &pad)], "enforce");
    let origin = format!("https://{HOST}:{}", t.front.port);
    let script = format!(
        "echo audit $(curl -s -o /dev/null -w '%{{http_code}}' -X POST -H 'content-type: application/json' -d '{{}}' {origin}/-/npm/v1/security/advisories/bulk)
         echo notifier $(curl -s -o /dev/null -w '%{{http_code}}' {origin}/npm)
         echo packument $(curl -s -o /dev/null -w '%{{http_code}}' {origin}/left-pad)
         sleep 1"
    );
    let o = exec_in_repo(&t.server, r.path(), &script);
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(
        out.contains("audit 403") && out.contains("notifier 403") && out.contains("packument 200"),
        "{out}\n{err}"
    );
    assert!(
        err.contains("warning [lockfile_violation]")
            && err.contains("left-pad")
            && err.contains("1 other(s) hidden"),
        "{err}"
    );
    assert!(
        !err.contains("registry_not_allowed") && !err.contains("/npm"),
        "npm's housekeeping is refused quietly: {err}"
    );
    let s = &t.server;
    // A real `npm ci` with npm's audit (and update check) left on: installs, no warning.
    std::fs::write(
        r.path().join(".npmrc"),
        format!("registry={origin}/\ncache=/tmp/npm-cache\naudit=true\nupdate-notifier=true\n"),
    )
    .unwrap();
    git(r.path(), &["commit", "-q", "-am", "audit on"]);
    let o = exec_in_repo(
        s,
        r.path(),
        "npm ci --no-fund --loglevel http && node -e 'console.log(require(\"left-pad\"))'; sleep 1",
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("pad-1.0.0"), "{out}\n{err}");
    assert!(
        err.contains("advisories/bulk") && !err.contains("cleanroom: warning"),
        "npm asked for its audit, the refusal was quiet: {out}\n{err}"
    );
    // An allowed registry whose upstream cannot be reached: a warning on exec.
    let dead = free_port();
    let r = repo(dead, &[("left-pad", "1.0.0", &pad)], "enforce");
    let o = exec_in_repo(
        s,
        r.path(),
        &format!("echo dead $(curl -s -o /dev/null -w '%{{http_code}}' https://{HOST}:{dead}/left-pad); sleep 1"),
    );
    let (out, err) = (stdout(&o), stderr(&o));
    assert!(out.contains("dead ") && !out.contains("dead 200"), "{out}");
    assert!(
        err.contains("warning [upstream_unreachable]") && err.contains("egress failed"),
        "{out}\n{err}"
    );
}
