"""What a page one exposed sandbox serves can read of another exposure, in Debian's headless
Chromium (Playwright, the system browser), against the real server inbound/preview.rs started.

The browser first opens exposure B with its token (so it holds B's token cookie), then opens
exposure A and, from A's page, fetches B's root with credentials. Under path routing both
are one origin: A's script reads B's page (the documented cost of path routing). Under
`--preview-domain localhost` each exposure is its own origin (`exp-<hex>.localhost`, which
Chromium resolves to loopback by itself): the read fails, while A's own requests keep working.
Environment: URL_A, URL_B (the exposures' URLs, tokens included), B_ROOT (B's root without a
token), MODE (`path` or `host`), CHROMIUM. Exits non-zero on the first failed check.
"""

import os
import sys

from playwright.sync_api import sync_playwright

URL_A, URL_B, B_ROOT, MODE = (os.environ[k] for k in ("URL_A", "URL_B", "B_ROOT", "MODE"))

READ_B = """async (url) => {
  try {
    const r = await fetch(url, {credentials: "include"});
    return "read:" + r.status + ":" + (await r.text());
  } catch (e) {
    return "blocked:" + e;
  }
}"""


def check(cond, what):
    if not cond:
        print(f"FAILED: {what}", file=sys.stderr)
        sys.exit(1)


with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                                 args=["--no-sandbox"])
    page = browser.new_context().new_page()
    page.goto(URL_B)
    check("hello / B" in page.content(), f"B opens with its token: {page.content()}")
    page.goto(URL_A)
    check("hello / A" in page.content(), f"A opens with its token: {page.content()}")
    # A's own relative requests work (its cookie, its origin).
    own = page.evaluate(READ_B, "./again")
    check(own.startswith("read:200:hello /again A"), f"A's own request: {own}")
    stolen = page.evaluate(READ_B, B_ROOT)
    if MODE == "path":
        check(stolen.startswith("read:200:hello / B"),
              f"path routing shares one origin, so A reads B (documented): {stolen}")
    else:
        check(stolen.startswith("blocked:"), f"A's page read exposure B: {stolen}")
    print(f"{MODE}: A reading B -> {stolen[:40]!r}")
    browser.close()
