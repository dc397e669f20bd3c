"""Exposing a sandbox's port from the console's sandbox page, in Debian's headless Chromium
(Playwright, the system browser), against the real server the Rust suite (web/mod.rs)
started with a TCP main listener (the exposure URLs' origin) and the console's own.

A python http.server runs in the sandbox; the page exposes its port with a TTL, lists the
exposure (port, URL, expiry), "Copy URL" puts that URL on the clipboard, the link opens the app in a new tab with no way back to the
console (rel=noopener noreferrer), the URL is fetched outside the browser too, and revoking
it from the page ends it (exposure_revoked).
Environment: CLEANROOM_BIN, CLEANROOM_HOST (the main listener, http://), WEB_URL (the
console's), ALICE_TOKEN, CHROMIUM. Prints one JSON line; exits non-zero on a failed check.
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

from playwright.sync_api import sync_playwright, expect

BIN = os.environ["CLEANROOM_BIN"]
MAIN = os.environ["CLEANROOM_HOST"].rstrip("/")
URL = os.environ["WEB_URL"].rstrip("/")
ALICE = os.environ["ALICE_TOKEN"]
T = 60_000
MARK = "exposed-from-the-console-7f3a"


def cli(*args):
    env = dict(os.environ, CLEANROOM_HOST=MAIN, CLEANROOM_TOKEN=ALICE, XDG_CONFIG_HOME="/nonexistent")
    p = subprocess.run([BIN, *args], env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"cleanroom {' '.join(args)}: {p.returncode}\n{p.stdout}\n{p.stderr}")
    return p.stdout


def get(url):
    """(status, body) of a plain GET outside the browser (no proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=30) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def main():
    out = {}
    sbx = cli("sandbox", "create").strip()
    assert sbx.startswith("sbx_"), sbx
    cli("exec", "-n", "--in", sbx, "--", "sh", "-c",
        f"mkdir -p /tmp/site && echo '<title>app</title><p id=mark>{MARK}</p>' > /tmp/site/index.html && "
        "setsid python3 -m http.server 8000 --bind 127.0.0.1 --directory /tmp/site </dev/null >/tmp/http.log 2>&1 & echo started")
    cli("exec", "-n", "--in", sbx, "--", "sh", "-c",
        "for i in $(seq 100); do curl -fsS --noproxy '*' -m 2 http://127.0.0.1:8000/ >/dev/null 2>&1 && exit 0; sleep 0.1; done; cat /tmp/http.log; exit 1")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"), args=["--no-sandbox"])
        ctx = browser.new_context(viewport={"width": 1366, "height": 800})
        ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=URL)
        page = ctx.new_page()
        page.set_default_timeout(T)
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{URL}/ui/login")
        page.fill("#token", ALICE)
        page.keyboard.press("Enter")
        page.wait_for_url(f"{URL}/ui/")
        page.goto(f"{URL}/ui/sandboxes/{sbx}")
        expect(page.locator("#status")).to_have_text("ready")
        expect(page.locator("#exposures")).to_contain_text("No port is exposed.")

        # --- expose port 8000 for 15 minutes from the page ------------------------------
        page.fill("#expose-port", "8000")
        page.select_option("#expose-ttl", "900")
        t0 = time.time()
        page.get_by_role("button", name="Expose").click()
        row = page.locator('#exposures tr[data-port="8000"]')
        expect(row).to_be_visible()
        link = row.locator("a")
        href = link.get_attribute("href")
        assert href.startswith(f"{MAIN}/_sandbox/exp_") and "cleanroom_token=" in href, href
        assert link.get_attribute("target") == "_blank", link.get_attribute("target")
        assert link.get_attribute("rel") == "noopener noreferrer", link.get_attribute("rel")
        # The expiry the page shows is the one asked for (15 minutes).
        expect(row.locator("td").nth(2)).to_have_text(re.compile(r"^in 1[45]m$"))
        listed = json.loads(cli("sandbox", "inspect", sbx, "--json"))["exposures"]
        assert len(listed) == 1 and listed[0]["port"] == 8000, listed
        expires = int(listed[0]["expiresAt"])
        assert abs(expires - (t0 + 900)) < 120, (expires, t0)

        # --- "Copy URL" puts exactly the listed URL (its token included) on the clipboard -
        page.evaluate("navigator.clipboard.writeText('')")
        row.get_by_role("button", name="Copy URL").click()
        expect(page.locator("#toast")).to_have_text("URL copied")
        copied = page.evaluate("navigator.clipboard.readText()")
        assert copied == href, (copied, href)

        # --- the link opens the app in a new tab, on the main listener's origin ----------
        with ctx.expect_page() as popup:
            link.click()
        app = popup.value
        app.wait_for_load_state()
        expect(app.locator("#mark")).to_have_text(MARK)
        assert app.url.startswith(f"{MAIN}/_sandbox/"), app.url
        assert app.evaluate("window.opener") is None, "the app's tab can reach the console's"
        app.close()
        # ... and the URL works outside the browser.
        status, body = get(href)
        assert status == 200 and MARK in body, (status, body)
        out["exposed_ms"] = round((time.time() - t0) * 1000)

        # --- revoke it from the page: the URL stops working -----------------------------
        row.get_by_role("button", name="Revoke").click()
        expect(page.locator('#exposures tr[data-port="8000"]')).to_have_count(0)
        status, body = get(href)
        assert status == 401 and "exposure_revoked" in body, (status, body)
        assert json.loads(cli("sandbox", "inspect", sbx, "--json")).get("exposures", []) == []
        assert not errors, errors
        browser.close()
    cli("sandbox", "rm", sbx)
    print(json.dumps(out))


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line the Rust side shows
        print(f"FAILED: {type(e).__name__}: {e}", file=sys.stderr)
        raise
