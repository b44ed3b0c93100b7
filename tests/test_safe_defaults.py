"""Safe defaults, checked on the page as `python -m app` launches it: it listens on 127.0.0.1 only unless --host is
given,
shares publicly only when asked (and warns), has Gradio's monitoring off, refuses uploads over the recording size limit,
and serves no file the page did not hand out."""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.cli.launch import launch_parser
from app.trace.frames import MAX_RECORDING_BYTES
from tests.pages import free_port, wait_for_page

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def launched() -> Iterator[tuple[Any, str]]:
    """The page launched by app.ui.layout.launch with its defaults, and its URL."""
    from app.ui.layout import launch

    port = free_port()
    # _frontend=False: Gradio's own 3 s probe of the page failed under load (a whole suite beside this one);
    # wait_for_page waits as long as it takes. The launch is otherwise the app's, defaults and all.
    demo = launch(port=port, prevent_thread_lock=True, quiet=True, _frontend=False)
    wait_for_page(f"http://127.0.0.1:{port}/")
    yield demo, f"http://127.0.0.1:{port}"
    demo.close()


def http(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def listening_addresses(port: int) -> list[str]:
    """The local addresses with a listening TCP socket on `port`, from /proc/net/tcp (IPv4) and tcp6."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if int(hex_port, 16) == port and state == "0A":
                found.append(address)
    return found


def test_the_command_line_binds_to_this_machine_and_shares_only_when_asked() -> None:
    args = launch_parser().parse_args([])
    assert args.host == "127.0.0.1" and args.share is False
    args = launch_parser().parse_args(["--host", "0.0.0.0", "--share"])
    assert args.host == "0.0.0.0" and args.share is True


def test_the_page_listens_on_127_0_0_1_only(launched: tuple[Any, str]) -> None:
    demo, url = launched
    port = int(url.rsplit(":", 1)[1])
    assert demo.server_name == "127.0.0.1" and not demo.share and demo.share_url is None
    if not os.path.exists("/proc/net/tcp"):
        pytest.skip("no /proc/net/tcp to read the bound address from")
    assert listening_addresses(port) == ["0100007F"]  # 127.0.0.1, and nothing else


def test_share_is_passed_on_only_when_asked_and_then_warns(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Gradio's own launch is replaced here so that no public tunnel is ever opened by the test."""
    import gradio as gr

    from app.ui.layout import launch

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(gr.Blocks, "launch", lambda self, **kw: calls.append(kw))
    monkeypatch.setenv("GRADIO_SERVER_NAME", "0.0.0.0")  # Gradio's own default would follow this
    launch()
    assert "--share" not in capsys.readouterr().err
    launch(share=True)
    warning = capsys.readouterr().err
    assert "Warning: --share makes this page public" in warning
    assert [(c["server_name"], c["share"]) for c in calls] == [("127.0.0.1", False), ("127.0.0.1", True)]
    assert all(c["enable_monitoring"] is False and c["max_file_size"] == MAX_RECORDING_BYTES for c in calls)


def test_monitoring_is_off(launched: tuple[Any, str]) -> None:
    _, url = launched
    for path in ("/monitoring", "/gradio_api/monitoring"):
        status, _ = http(url + path)
        assert status in (403, 404), path


def test_uploads_over_the_limit_are_refused(launched: tuple[Any, str]) -> None:
    _, url = launched
    for size, accepted in ((1000, True), (MAX_RECORDING_BYTES + 1, False)):
        boundary = uuid.uuid4().hex
        body = ((f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"big.jsonl\"\r\n"
                 "Content-Type: application/octet-stream\r\n\r\n").encode() + b"x" * size
                + f"\r\n--{boundary}--\r\n".encode())
        status, reply = http(url + "/gradio_api/upload", body,
                             {"Content-Type": f"multipart/form-data; boundary={boundary}"})
        assert (status == 200) == accepted, (size, status, reply[:200])
        if not accepted:
            assert status == 413, reply[:200]


@pytest.mark.parametrize("target", ["/etc/passwd", str(ROOT / "app" / "trace" / "frames.py"), "README.md",
                                    "assets/models/ar.json", str(ROOT / "recordings" / "examples"),
                                    "../../../../etc/passwd", str(Path(sys.executable).resolve())])
def test_no_file_outside_what_the_page_hands_out_is_served(launched: tuple[Any, str], target: str) -> None:
    _, url = launched
    status, _ = http(f"{url}/gradio_api/file={target}")
    assert status in (403, 404), target


def test_a_recording_saved_in_the_recordings_folder_is_not_served(launched: tuple[Any, str], recordings: Path) -> None:
    _, url = launched
    mine = recordings / "mine.jsonl"
    mine.write_text('{"type": "header", "schema": 1, "prompt": "private", "sources": {}}\n')
    status, _ = http(f"{url}/gradio_api/file={mine}")
    assert status in (403, 404)
