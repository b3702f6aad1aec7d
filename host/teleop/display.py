# Seeing the sim target: the interactive MuJoCo viewer where a display exists, synced at about
# 30 Hz on its own thread so control never waits for drawing (reference design); offscreen
# otherwise, one picture of the final pose rendered with mujoco.Renderer.
import os
import sys
import threading
import time

VIEWER_HZ = 30.0


def has_display():
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def prefer_offscreen_gl():
    # Without a display, MuJoCo's default GL (GLFW) cannot render: pick EGL before mujoco loads.
    if not has_display() and "MUJOCO_GL" not in os.environ and "mujoco" not in sys.modules:
        os.environ["MUJOCO_GL"] = "egl"


class ViewerThread:
    def __init__(self, target):
        import mujoco.viewer
        self.target = target
        self.handle = mujoco.viewer.launch_passive(target.plant.m, target.plant.d)
        self._stop = threading.Event()
        self._th = threading.Thread(target=self._run, name="teleop-viewer", daemon=True)
        self._th.start()

    def _run(self):
        period = 1.0 / VIEWER_HZ
        while not self._stop.is_set() and self.handle.is_running():
            with self.target.lock:
                self.handle.sync()
            time.sleep(period)

    def close(self):
        self._stop.set()
        self._th.join(timeout=1.0)
        try:
            self.handle.close()
        except Exception:
            pass


def snapshot(target, path, width=640, height=480, camera="overview"):
    # Render the target's current state to a PNG. Returns None, or why it could not.
    try:
        import mujoco
        import matplotlib
        matplotlib.use("Agg")
        from matplotlib import pyplot
        with target.lock:
            r = mujoco.Renderer(target.plant.m, height, width)
            r.update_scene(target.plant.d, camera=camera)
            img = r.render()
            r.close()
        pyplot.imsave(path, img)
        return None
    except Exception as e:       # no GL here: the run itself is fine, say so and go on
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
