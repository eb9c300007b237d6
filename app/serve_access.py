"""Who may use a page of `puffer-tui serve`: the holder of its token, from its own pages.

Every request needs the token serve printed (`/?token=T`, as Jupyter does): a GET of `/` with
the right token sets an HttpOnly, SameSite=Strict cookie and redirects to the clean URL, so
the page's own requests (static files, the websocket `/ws`) carry the cookie; a script may
send `?token=T` on any request instead. A request with an Origin header (every websocket a
browser opens) must come from the served host itself, `scheme://Host`: another site's page
is refused even when the browser would send the cookie (cross-site websocket hijacking).
Refusals are 403 with one line saying what to open. aiohttp only; no Textual here.
"""

from __future__ import annotations

import hmac
import logging
import re
import secrets
from urllib.parse import quote

TOKEN_ENV_VAR = "PUFFER_TUI_SERVE_TOKEN"  # a chosen token that need not show in `ps`
TOKEN_QUERY = "token"
MIN_TOKEN_LENGTH = 16  # a chosen token shorter than this could be guessed
TOKEN_HINT = "open the URL `puffer-tui serve` printed (it ends in ?token=...)"
REDACTED = "[redacted]"
# query keys whose values are secrets wherever they show up in a logged URL
SECRET_QUERY = re.compile(r"((?:^|[?&;\s])(?:token|secret|password|passwd|api_key|apikey|key|auth)"
                          r"=)[^&;\s\"']*", re.IGNORECASE)


def new_token() -> str:
    return secrets.token_urlsafe(32)  # 256 random bits


def cookie_name(port: int) -> str:
    # cookies are per host, not per port: two serves on one machine keep theirs apart
    return f"puffer_tui_serve_{port}"


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host  # an IPv6 address in a URL


def token_url(host: str, port: int, token: str | None) -> str:
    """The URL to open: the page, with the token that lets a browser in."""
    url = f"http://{url_host(host)}:{port}/"
    return url if token is None else f"{url}?{TOKEN_QUERY}={quote(token, safe='')}"


def redact(text: str, token: str | None) -> str:
    """`text` without the token (as typed or URL-quoted) and without the value of any
    secret-looking query key (`?token=...`, `&password=...`)."""
    if token:
        for form in {token, quote(token, safe="")}:
            text = text.replace(form, REDACTED)
    return SECRET_QUERY.sub(lambda m: m.group(1) + REDACTED, text)


class RedactSecrets(logging.Filter):
    """On a handler: every record it prints goes out redacted (aiohttp's access log names
    each request's URL, `GET /?token=...`, and scrollback and log files keep it)."""

    def __init__(self, token: str | None):
        super().__init__()
        self.token = token

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info:
            # a traceback may quote the request (or, shown with its locals, the token): it
            # becomes plain text here, redacted with the rest
            message += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info, record.exc_text = None, None
        clean = redact(message, self.token)
        if clean != message or record.args:
            record.msg, record.args = clean, ()
        return True


def redact_logs(token: str | None, logger: logging.Logger | None = None) -> None:
    """Put RedactSecrets on every handler of `logger` (the root logger: where aiohttp's and
    textual-serve's records are printed)."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, RedactSecrets) for f in handler.filters):
            handler.addFilter(RedactSecrets(token))


def tokens_match(given: str, token: str) -> bool:
    # constant time: how much of a guess was right must not show in the reply's timing
    return hmac.compare_digest(given.encode("utf-8"), token.encode("utf-8"))


def same_origin(origin: str, request) -> bool:
    """Whether a request's Origin is the host it was sent to (what the page was served
    from): the browser sets Origin and Host, a page cannot."""
    return origin.lower() == f"{request.scheme}://{request.host}".lower()


def refusal(text: str):
    from aiohttp import web

    return web.Response(status=403, text=f"puffer-tui serve: {text}\n")


def access_guard(token: str | None, port: int):
    """aiohttp middleware: the Origin check on every request, then the token (none with
    --no-token)."""
    from aiohttp import web
    from multidict import MultiDict

    cookie = cookie_name(port)

    @web.middleware
    async def guard(request, handler):
        origin = request.headers.get("Origin")
        if origin is not None and not same_origin(origin, request):
            return refusal(f"refused a request from the page of another site ({origin}); "
                           f"{TOKEN_HINT} in its own tab")
        if token is None:
            return await handler(request)
        given = request.query.get(TOKEN_QUERY)
        if given is not None:
            if not tokens_match(given, token):
                return refusal(f"wrong token; {TOKEN_HINT}")
            if request.method == "GET" and request.path == "/":
                # the token goes into a cookie and out of the address bar and history
                rest = MultiDict((k, v) for k, v in request.query.items() if k != TOKEN_QUERY)
                reply = web.Response(status=303, headers={
                    "Location": str(request.rel_url.with_query(rest))})
                reply.set_cookie(cookie, token, httponly=True, samesite="Strict", path="/")
                return reply
            return await handler(request)
        if tokens_match(request.cookies.get(cookie, ""), token):
            return await handler(request)
        return refusal(f"this page needs its token; {TOKEN_HINT}")

    return guard


async def private_headers(request, response) -> None:
    """on_response_prepare: no framing by other sites, no address sent to other sites."""
    response.headers.setdefault("X-Frame-Options", "DENY")
    response.headers.setdefault("Referrer-Policy", "no-referrer")


def page_context(request, title: str) -> dict:
    """The page template's values, its websocket on the host the page was served from (the
    Origin check and the cookie both need the same host: textual-serve's own page names the
    --host, which breaks a page opened as localhost for 127.0.0.1)."""
    try:
        font_size = int(request.query.get("fontsize", "16"))
    except ValueError:
        font_size = 16
    scheme = "wss" if request.scheme == "https" else "ws"
    return {"font_size": font_size, "app_websocket_url": f"{scheme}://{request.host}/ws",
            "config": {"static": {"url": "/static/"}}, "application": {"name": title}}
