"""What `puffer-tui serve` logs never carries its secret: the access log names each request's
URL, and a URL may hold `?token=...` (a script's request, the browser's first one)."""

import logging
import secrets
import sys

import pytest
from engine_harness import wait_until
from serve_probe import http_get, serving

from puffer_tui.app.serve_access import REDACTED, RedactSecrets, redact, redact_logs

TOKEN = "a-chosen-token-" + secrets.token_hex(8)


def test_redact_drops_the_token_and_secret_query_values():
    line = f'"GET /static/x?fontsize=3&token={TOKEN}&password=hunter2 HTTP/1.1" 200'
    clean = redact(line, TOKEN)
    assert TOKEN not in clean and "hunter2" not in clean
    assert "fontsize=3" in clean and f"token={REDACTED}" in clean
    # a wrong token is a secret too (a near miss of the real one)
    assert "near-miss" not in redact("GET /?token=near-miss HTTP/1.1", TOKEN)


def test_the_filter_redacts_arguments_and_tracebacks():
    record = logging.LogRecord("aiohttp.access", logging.INFO, __file__, 1,
                               '%s "GET /?token=%s"', ("127.0.0.1", TOKEN), None)
    assert RedactSecrets(TOKEN).filter(record)
    assert TOKEN not in record.getMessage() and "127.0.0.1" in record.getMessage()
    try:
        raise ValueError(f"bad request /?token={TOKEN}")
    except ValueError:
        failed = logging.LogRecord("aiohttp.server", logging.ERROR, __file__, 1,
                                   "Error handling request", (), sys.exc_info())
    RedactSecrets(TOKEN).filter(failed)
    assert failed.exc_info is None  # printed as redacted text, not by the handler's renderer
    assert "ValueError" in failed.getMessage() and TOKEN not in failed.getMessage()


def test_redact_logs_guards_each_handler_once():
    logger = logging.getLogger("serve-redaction-test")
    handler = logging.StreamHandler()
    logger.addHandler(handler)
    try:
        redact_logs(TOKEN, logger)
        redact_logs(TOKEN, logger)
        assert sum(isinstance(f, RedactSecrets) for f in handler.filters) == 1
    finally:
        logger.removeHandler(handler)


def test_served_requests_leave_no_token_in_the_log(tmp_path):
    pytest.importorskip("textual_serve", reason="the web extra (textual-serve) is not installed")
    with serving(tmp_path, token=TOKEN) as served:
        assert http_get(served.base + f"?token={TOKEN}")[0] == 303
        assert http_get(served.base + f"static/none?token={TOKEN}&fontsize=3")[0] == 404
        assert http_get(served.base + "?token=wrong-guess-of-it")[0] == 403
        wait_until(lambda: sum("GET" in line for line in served.stdout) >= 3, 20, 0.1,
                   "three access-log lines")
    url_line = f"    http://127.0.0.1:{served.port}/?token={TOKEN}"
    log = [line for line in served.stdout + served.stderr if line != url_line]
    joined = "".join(line.strip() for line in log)  # a long line may wrap mid-token
    assert "GET" in joined and REDACTED in joined
    assert TOKEN not in joined and "wrong-guess-of-it" not in joined
