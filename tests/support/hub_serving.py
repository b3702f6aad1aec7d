# A link Hub on its own thread, as `surepick link serve` runs it, for the hub's tests.
import threading

from surepick.host.link.hub import Hub


class Serving:
    def __init__(self, port, **kw):
        self.hub = Hub(port, **kw)
        self.stop = threading.Event()
        self.hub.start()
        self.thread = threading.Thread(target=self.hub.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.hub.close()
