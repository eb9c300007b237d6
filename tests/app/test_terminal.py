"""app/terminal.py's `no_terminal`: which stream keeps a dashboard from being shown, and a
served page's web driver, which needs no terminal at all."""

import io
import sys

import pytest

from puffer_tui.app.terminal import no_terminal


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


@pytest.fixture
def streams(monkeypatch):
    monkeypatch.delenv("TEXTUAL_DRIVER", raising=False)

    def use(stdout, stdin):
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(sys, "stdin", stdin)

    return use


def test_a_terminal_on_both_ends_can_show_a_dashboard(streams):
    streams(Tty(), Tty())
    assert no_terminal() is None


@pytest.mark.parametrize("stdout, stdin, reason", [
    (io.StringIO(), Tty(), "stdout is not a terminal"),  # `> log`, a pipe
    (Tty(), io.StringIO(), "stdin is not a terminal"),   # `< file`: no key would reach it
    (Tty(), None, "stdin is not a terminal"),            # no stdin at all (pythonw, a daemon)
    (Tty(), Closed(), "stdin is not a terminal"),        # closed under us
    (Tty(), object(), "stdin is not a terminal"),        # replaced by something not a file
])
def test_the_stream_that_is_not_a_terminal_is_named(streams, stdout, stdin, reason):
    streams(stdout, stdin)
    assert no_terminal() == reason


def test_a_page_served_through_textuals_web_driver_needs_no_terminal(streams, monkeypatch):
    streams(io.StringIO(), io.StringIO())
    monkeypatch.setenv("TEXTUAL_DRIVER", "textual_serve.driver:WebDriver")
    assert no_terminal() is None
