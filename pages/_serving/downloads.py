"""A download's file kept for a minute after no session refers to it: the first click works on a busy server.

A download button whose data is a callable (the trace as JSON or CSV, pages/_widgets.downloads) is deferred: on a
click the browser asks the server to run the callable, Streamlit (1.67) stores the file it returns, referred to by
no session, and answers its address, which the browser then fetches. Every script run that ends, of any session,
sweeps the files no session refers to: it marks a download at its first sweep and deletes it at its second. A class
server ends several runs a second, so the file went before the browser's fetch arrived: a 404, and the student had
to click again (benchmarks.class_load counts it: docs/performance.md, "The numbers behind the code's defaults"; a
static button's old file goes the same way when its session reruns). Here a download is deleted at the first sweep
at least KEEP_S seconds after a sweep first found it unreferred, and not before: time, not other sessions' runs,
bounds how long a file waits for its fetch. Memory: the files of the last minute's clicks (a trace's JSON is tens of
kB).
"""

from __future__ import annotations

import time

from streamlit.runtime import media_file_manager
from streamlit.runtime.media_file_storage import MediaFileKind

KEEP_S = 60.0  # seconds a download waits for its fetch after no session refers to it
clock = time.monotonic
STREAMLIT_METADATA = media_file_manager.MediaFileMetadata  # Streamlit's own, as it was before install()


class KeptMetadata(STREAMLIT_METADATA):
    """Streamlit's record of a stored file, whose "marked for delete" comes true KEEP_S after it was marked."""

    def __init__(self, kind: MediaFileKind = MediaFileKind.MEDIA) -> None:
        super().__init__(kind)
        self._unreferred_since: float | None = None

    @property
    def is_marked_for_delete(self) -> bool:
        return self._unreferred_since is not None and clock() - self._unreferred_since >= KEEP_S

    def mark_for_delete(self) -> None:
        if self._unreferred_since is None:  # the sweeps after the first do not move the time
            self._unreferred_since = clock()


def install() -> None:
    """Once per process (app.py calls it on every run): the files Streamlit stores from now on are KeptMetadata's."""
    media_file_manager.MediaFileMetadata = KeptMetadata
