"""The web console in Debian's headless Chromium, driven by Playwright (system browser,
no download), against the real server and sandboxes the Rust suite (web/mod.rs) started.

Every step acts as a person would (type, click, keys) and checks what the page shows
without reloading it; the CLI (the real binary) changes things behind the page's back.
Environment: CLEANROOM_BIN, CLEANROOM_HOST (the unix socket: root, an admin),
WEB_URL (the --ui-listen base), ALICE_TOKEN, BOB_TOKEN, CHROMIUM, UPSTREAM_HOST,
SCREENSHOTS (optional: a directory for the docs' screenshots).
Prints one JSON line of what it measured; exits non-zero on the first failed check.
"""

import http.server
import json
import os
import subprocess
import sys
import threading
import time

from playwright.sync_api import sync_playwright, expect

BIN = os.environ["CLEANROOM_BIN"]
UNIX = os.environ["CLEANROOM_HOST"]
URL = os.environ["WEB_URL"].rstrip("/")
ALICE = os.environ["ALICE_TOKEN"]
BOB = os.environ["BOB_TOKEN"]
SHOTS = os.environ.get("SCREENSHOTS")
UPSTREAM_HOST = os.environ.get("UPSTREAM_HOST", "api.test")
T = 60_000  # ms, per wait


def cli(*args, token=None, check=True, timeout=120):
    """The real CLI: over the unix socket (root), or as a token's principal over TCP."""
    env = dict(os.environ)
    env.pop("CLEANROOM_TOKEN", None)
    env["XDG_CONFIG_HOME"] = "/nonexistent"
    if token:
        env["CLEANROOM_HOST"] = URL
        env["CLEANROOM_TOKEN"] = token
    else:
        env["CLEANROOM_HOST"] = UNIX
    p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"cleanroom {' '.join(args)}: {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p


def cli_bg(*args, token=None):
    env = dict(os.environ)
    env.pop("CLEANROOM_TOKEN", None)
    env["XDG_CONFIG_HOME"] = "/nonexistent"
    env["CLEANROOM_HOST"] = URL if token else UNIX
    if token:
        env["CLEANROOM_TOKEN"] = token
    return subprocess.Popen([BIN, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Hello(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self):
        Hello.hits += 1
        body = f"hello:{self.path}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def upstream():
    s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    return s.server_address[1]


def shot(page, name):
    if SHOTS:
        page.evaluate("window.scrollTo(0, 0)")
        page.screenshot(path=os.path.join(SHOTS, f"web-{name}.png"))


def new_page(browser, dialogs):
    ctx = browser.new_context(viewport={"width": 1366, "height": 800}, accept_downloads=True)
    page = ctx.new_page()
    page.set_default_timeout(T)
    # Any dialog at all (alert/confirm/prompt) is an injected script running: record it.
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return ctx, page, errors


def login_token(page, token):
    page.goto(f"{URL}/ui/login")
    page.fill("#token", token)
    page.keyboard.press("Enter")
    page.wait_for_url(f"{URL}/ui/")
    expect(page.locator("#who")).not_to_be_empty()


def csrf_refused(page, sbx):
    """A state change without the CSRF token, from the logged-in page itself."""
    r = page.evaluate(
        """async (id) => {
            const r = await fetch('/cleanroom.v1.SandboxService/TerminateSandbox', {
                method: 'POST', headers: {'Content-Type': 'application/json'},
                body: JSON.stringify({sandboxId: id})});
            const out = await fetch('/ui/api/logout', {method: 'POST'});
            const rest = await fetch('/v1/sandboxes/' + id, {method: 'DELETE'});
            const j = async (x) => { try { return JSON.parse(await x.text()); } catch (_) { return {}; } };
            return {status: r.status, body: await j(r), logout: out.status,
                    rest: rest.status, restBody: await j(rest)};
        }""",
        sbx,
    )
    assert r["status"] == 403 and r["body"]["code"] == "permission_denied", r
    assert r["logout"] == 403, r
    assert r["rest"] == 403 and r["restBody"].get("error", {}).get("code") == "permission_denied", r
    # Still there, still ready.
    st = json.loads(cli("sandbox", "inspect", sbx, "--json", token=ALICE).stdout)
    assert "READY" in json.dumps(st.get("status")), st


def main():
    out = {}
    dialogs = []
    port = upstream()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox"])

        # --- log in with a token; a sandbox made by the CLI appears without reloading ---
        ctx, page, errors = new_page(browser, dialogs)
        login_token(page, ALICE)
        expect(page.locator("#who")).to_have_text("alice")
        page.evaluate("window.__same_document = 1")
        expect(page.locator("#count")).to_have_text("0 sandboxes")
        t0 = time.monotonic()
        sbx = cli("sandbox", "create", "--label", "team=web", token=ALICE).stdout.strip()
        assert sbx.startswith("sbx_"), sbx
        row = page.locator(f'tr[data-id="{sbx}"]')
        expect(row).to_be_visible()
        expect(row.locator(".status")).to_have_text("ready")
        out["appear_after_create_ms"] = round((time.monotonic() - t0) * 1000)
        assert page.evaluate("window.__same_document") == 1, "the page reloaded"

        # --- keyboard: j focuses the row, Enter opens the sandbox page ------------------
        page.keyboard.press("j")
        page.keyboard.press("Enter")
        page.wait_for_url(f"{URL}/ui/sandboxes/{sbx}")
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator("#snapshots")).to_have_text("No snapshot of this sandbox.")

        # --- follow live output of a running execution ---------------------------------
        runner = cli_bg("exec", "-n", "--in", sbx, "--", "sh", "-c",
                        "i=0; while [ $i -lt 40 ]; do i=$((i+1)); echo tick-$i; sleep 0.25; done", token=ALICE)
        output = page.locator("#output")
        expect(output).to_contain_text("tick-2")
        seen_early = output.inner_text()
        assert "tick-40" not in seen_early, "not live: the whole output came at once"
        expect(output).to_contain_text("tick-40", timeout=T)
        expect(output).to_contain_text("[succeeded, exit 0]")
        runner.wait(timeout=60)
        assert page.evaluate("window.__same_document") == 1

        # --- XSS attempts: output, terminal escapes, a file named with HTML --------------
        evil = ("<script>alert('out')</script><img src=x onerror=alert('img')>"
                "\x1b]0;pwned-title\x07\x1b[31mRED\x1b[0m\x1b]8;;javascript:alert('osc8')\x1b\\link\x1b]8;;\x1b\\"
                "\x1b[2J\x9b31m")
        script = ("printf '%s\\n' \"$E\"; printf 'hello from the sandbox\\n' > /tmp/hello.txt; "
                  "touch '/tmp/<img src=x onerror=alert(1)>.txt'")
        cli("exec", "-n", "--in", sbx, "-e", f"E={evil}", "--", "sh", "-c", script, token=ALICE)
        last = page.locator("#executions [data-exec]").first
        last.click()
        expect(output).to_contain_text("<script>alert('out')</script>")
        text = output.inner_text()
        assert "\x1b" not in text and "pwned-title" not in text, repr(text)
        assert "RED" in text and "link" in text and "31m" not in text, repr(text)
        assert page.locator("#output script, #output img, #output a").count() == 0
        assert page.title() == "Cleanroom", page.title()

        # --- files: browse, the HTML-named file is text, download one ------------------
        page.fill("#files-path", "/tmp")
        page.get_by_role("button", name="List").click()
        evil_row = page.locator('#files tr[data-path="/tmp/<img src=x onerror=alert(1)>.txt"]')
        expect(evil_row).to_be_visible()
        expect(evil_row.locator("td.name")).to_have_text("<img src=x onerror=alert(1)>.txt")
        assert page.locator("#files img").count() == 0
        with page.expect_download() as dl:
            page.locator('#files tr[data-path="/tmp/hello.txt"] button.download').click()
        path = dl.value.path()
        with open(path, "rb") as f:
            assert f.read() == b"hello from the sandbox\n"
        assert dl.value.suggested_filename == "hello.txt", dl.value.suggested_filename
        page.locator("#snapshot").click()
        expect(page.locator("#snapshots tr[data-snapshot]")).to_have_count(1, timeout=T)
        expect(page.locator("#snapshots")).not_to_contain_text("No snapshot")
        shot(page, "sandbox")

        # --- CSRF: a state change without the token is refused -------------------------
        csrf_refused(page, sbx)

        # --- answer an ask request from the page; the connection goes through ----------
        policy = "/tmp/cleanroom-web-ask.yaml"
        with open(policy, "w") as f:
            f.write("version: 1\nsandbox:\n  network:\n    unknown: ask\n    approval_timeout_seconds: 120\n")
        asker = cli("sandbox", "create", "--policy", policy, "--label", "team=web", token=ALICE).stdout.strip()
        page.locator("nav a", has_text="Approvals").click()
        page.wait_for_url(f"{URL}/ui/approvals")
        curl = cli_bg("exec", "-n", "--in", asker, "--on-ask", "wait", "--",
                      "curl", "-sS", "-m", "100", "--noproxy", "*", f"http://{UPSTREAM_HOST}:{port}/via-page", token=ALICE)
        req = page.locator(f'#requests tr[data-sandbox="{asker}"]')
        expect(req).to_be_visible()
        expect(req.locator("td.host")).to_have_text(f"{UPSTREAM_HOST}:{port}")
        assert Hello.hits == 0, "held connection reached the upstream"
        shot(page, "approvals")
        req.focus()
        page.keyboard.press("y")
        expect(req).to_have_count(0)
        so, se = curl.communicate(timeout=120)
        assert curl.returncode == 0 and so == "hello:/via-page", (curl.returncode, so, se)
        assert Hello.hits == 1

        # --- pools page renders (hit rate column) --------------------------------------
        page.locator("nav a", has_text="Pools").click()
        page.wait_for_url(f"{URL}/ui/pools")
        expect(page.locator("table.grid th", has_text="hit rate")).to_be_visible()
        page.locator("nav a", has_text="Sandboxes").click()
        expect(page.locator(f'tr[data-id="{asker}"]')).to_be_visible()
        shot(page, "sandboxes")
        assert not errors, errors

        # --- another principal sees nothing ---------------------------------------------
        bctx, bob, berrors = new_page(browser, dialogs)
        login_token(bob, BOB)
        expect(bob.locator("#count")).to_have_text("0 sandboxes")
        assert bob.locator(f"text={sbx}").count() == 0
        bob.goto(f"{URL}/ui/sandboxes/{sbx}")
        expect(bob.locator("h1")).to_have_text("Not found")
        got = bob.evaluate(
            """async (id) => {
                const s = await (await fetch('/ui/api/session')).json();
                const r = await fetch('/cleanroom.v1.SandboxService/GetSandbox', {method: 'POST',
                    headers: {'Content-Type': 'application/json', 'x-csrf-token': s.csrf},
                    body: JSON.stringify({sandboxId: id})});
                return {status: r.status, body: await r.json()};
            }""",
            sbx,
        )
        assert got["status"] == 404 and got["body"]["code"] == "not_found", got
        assert got["body"]["details"][0]["debug"]["code"] == "sandbox_not_found", got
        # Not an admin: no owner filter, and the API refuses another owner's list.
        bob.goto(f"{URL}/ui/")
        expect(bob.locator("#count")).to_have_text("0 sandboxes")
        assert bob.locator("#owner-filter").count() == 0
        assert bob.locator("th", has_text="owner").count() == 0
        other = bob.evaluate(
            """async () => {
                const s = await (await fetch('/ui/api/session')).json();
                const r = await fetch('/cleanroom.v1.SandboxService/ListSandboxes', {method: 'POST',
                    headers: {'Content-Type': 'application/json', 'x-csrf-token': s.csrf},
                    body: JSON.stringify({owner: 'alice'})});
                return {status: r.status, body: await r.json()};
            }"""
        )
        assert other["status"] == 403 and other["body"]["code"] == "permission_denied", other
        assert other["body"]["details"][0]["debug"]["details"]["reason"] == "owner_filter", other
        assert "sbx_" not in json.dumps(other), other
        bob.goto(f"{URL}/ui/approvals")
        expect(bob.locator("#no-requests")).to_be_visible()
        bctx.close()
        bsbx = cli("sandbox", "create", "--label", "team=bob", token=BOB).stdout.strip()
        assert bsbx.startswith("sbx_"), bsbx

        # --- cleanroom ui: a one-time link for the unix user ----------------------------
        link = cli("ui").stdout.strip()
        assert link.startswith(f"{URL}/ui/login?code="), link
        cctx, root, _ = new_page(browser, dialogs)
        root.goto(link)
        root.wait_for_url(f"{URL}/ui/")
        expect(root.locator("#who")).to_have_text("uid:0 (admin)")
        # An admin sees alice's sandboxes; the code is gone from the address bar.
        expect(root.locator(f'tr[data-id="{sbx}"]')).to_be_visible()
        # ... and Bob's, each with its owner; the owner filter (with the label filter).
        expect(root.locator(f'tr[data-id="{sbx}"] td.owner')).to_have_text("alice")
        expect(root.locator(f'tr[data-id="{bsbx}"] td.owner')).to_have_text("bob")
        root.fill("#owner-filter", "bob")
        root.locator("#owner-filter").press("Enter")
        expect(root.locator(f'tr[data-id="{sbx}"]')).to_have_count(0)
        expect(root.locator(f'tr[data-id="{bsbx}"]')).to_be_visible()
        expect(root.locator("#count")).to_have_text("1 sandbox")
        root.fill("#label-filter", "team=web")
        root.locator("#label-filter").press("Enter")
        expect(root.locator("#count")).to_have_text("0 sandboxes")
        root.fill("#owner-filter", "alice")
        root.locator("#owner-filter").press("Enter")
        expect(root.locator(f'tr[data-id="{sbx}"]')).to_be_visible()
        expect(root.locator(f'tr[data-id="{asker}"]')).to_be_visible()
        expect(root.locator(f'tr[data-id="{bsbx}"]')).to_have_count(0)
        shot(root, "sandboxes-admin")
        cctx.close()
        dctx, again, _ = new_page(browser, dialogs)
        again.goto(link)
        expect(again.locator("#login-error")).to_contain_text("unknown, used or expired")
        dctx.close()

        # --- logout ends the session ------------------------------------------------------
        page.get_by_role("button", name="Log out").click()
        page.wait_for_url(f"{URL}/ui/login**")
        st = page.evaluate("async () => (await fetch('/ui/api/session')).status")
        assert st == 401, st

        assert not dialogs, f"a script ran: {dialogs}"
        browser.close()
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line the Rust side shows
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise
