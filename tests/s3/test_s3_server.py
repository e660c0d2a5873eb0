"""The test S3 server itself: it starts on 127.0.0.1, and dies with the process that started it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.s3_server import process_alive

if TYPE_CHECKING:
    from tests.s3_server import SeaweedS3

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_server_listens_on_loopback_only(s3_server: SeaweedS3) -> None:
    assert s3_server.endpoint.startswith("http://127.0.0.1:")
    assert s3_server.is_running and s3_server.startup_seconds is not None


def test_kill_9_of_the_owner_takes_the_server_with_it(tmp_path: Path) -> None:
    owner = subprocess.Popen(
        [sys.executable, "-m", "tests.s3_server", str(tmp_path / "server")],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert owner.stdout is not None
        info = json.loads(owner.stdout.readline())
        weed = int(info["pid"])
        assert process_alive(weed)
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        deadline = time.monotonic() + 10
        while process_alive(weed) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not process_alive(weed), "weed outlived the process that started it"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()
