"""pages/_serving/downloads.py: a download's file waits KEEP_S seconds for its fetch however many script runs end
meanwhile (a class server ends several a second), on Streamlit's own media file manager."""

from __future__ import annotations

import pytest
from streamlit.runtime import media_file_manager
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from pages._serving import downloads as _downloads


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    """Streamlit's own class (an earlier test's app may have installed ours for the process; install() here replaces
    it for the rest of the test only), and a clock to move."""
    monkeypatch.setattr(media_file_manager, "MediaFileMetadata", _downloads.STREAMLIT_METADATA)
    fake = Clock()
    monkeypatch.setattr(_downloads, "clock", fake)
    return fake


def clicked(manager: MediaFileManager) -> str:
    """A deferred button drawn, then clicked: the name of the file the browser is told to fetch."""
    deferred = manager.add_deferred(lambda: '{"steps": []}', "application/json", "1.(2.3).4", file_name="trace.json")
    return manager.execute_deferred(deferred).rsplit("/", 1)[-1]


def test_without_it_two_runs_ending_anywhere_delete_a_clicked_download(clock):
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    name = clicked(manager)
    manager.remove_orphaned_files()  # another session's run ends
    assert manager.read_file(name) is not None
    manager.remove_orphaned_files()  # and another: the browser's fetch would now get a 404
    assert manager.read_file(name) is None


def test_a_clicked_download_waits_for_its_fetch_however_many_runs_end(clock):
    _downloads.install()
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    name = clicked(manager)
    for _ in range(200):  # a class's runs ending over KEEP_S seconds
        manager.remove_orphaned_files()
        assert manager.read_file(name) is not None
        clock.now += 0.99 * _downloads.KEEP_S / 200
    assert manager.read_file(name).content == b'{"steps": []}'
    clock.now += 0.02 * _downloads.KEEP_S
    manager.remove_orphaned_files()  # a minute after the first sweep found it: gone, memory given back
    assert manager.read_file(name) is None


def test_files_a_session_shows_are_kept_and_media_still_go_at_once(clock):
    _downloads.install()
    manager = MediaFileManager(MemoryMediaFileStorage("/media"))
    shown = manager.add(b"a log", "text/plain", "1.(5).1", file_name="log.txt", is_for_static_download=True)
    image = manager.add(b"\x89PNG", "image/png", "1.(5).2")
    manager.clear_session_refs()  # the session's next run starts and draws neither again
    clock.now += 10 * _downloads.KEEP_S
    manager.remove_orphaned_files()
    assert manager.read_file(shown.rsplit("/", 1)[-1]) is not None  # unreferred only now: its minute starts
    assert manager.read_file(image.rsplit("/", 1)[-1]) is None  # not a download: swept at once, as before
    clock.now += _downloads.KEEP_S
    manager.remove_orphaned_files()
    assert manager.read_file(shown.rsplit("/", 1)[-1]) is None
