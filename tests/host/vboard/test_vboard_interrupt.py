# The virtual board's Ctrl-C goes to the interpreter's main thread (host/vboard/interp.py), as a
# Pico's always interrupts the main program: sent to the process as a whole, the kernel may hand
# the signal to any thread that does not block it, and a helper thread of the virtual HAL that
# took it left the firmware running. Checked on a real process whose threads all block SIGINT
# and wait for it with sigtimedwait: the kernel's own rules (a thread-directed signal is pending
# for that thread only, a process-directed one for any) are the oracle, and the same child
# under a plain kill shows the check can tell the two apart.
import os
import signal
import subprocess
import sys

from surepick.host.vboard import interp

CHILD = """
import signal, sys, threading
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
got = {}
def helper():
    got["helper"] = signal.sigtimedwait({signal.SIGINT}, 1.5) is not None
t = threading.Thread(target=helper)
t.start()
print("ready", flush=True)
t.join()
got["main"] = signal.sigtimedwait({signal.SIGINT}, 1.5) is not None
print(sorted(got.items()), flush=True)
"""


def _who_takes_it(send):
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        send(p.pid)
        out = p.stdout.readline().strip()
        assert p.wait(30) == 0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return out


def test_the_interrupt_reaches_the_main_thread_not_a_helper():
    assert _who_takes_it(lambda pid: interp.signal_main_thread(pid, signal.SIGINT)) == \
        "[('helper', False), ('main', True)]"


def test_a_signal_to_the_whole_process_is_taken_by_a_waiting_helper():
    # the control: what the board did before, which this check must be able to see
    assert _who_takes_it(lambda pid: os.kill(pid, signal.SIGINT)) == "[('helper', True), ('main', False)]"


def test_the_interpreter_is_interrupted_through_it(monkeypatch):
    sent = []
    monkeypatch.setattr(interp, "signal_main_thread", lambda pid, sig: sent.append((pid, sig)))
    i = interp.Interpreter([sys.executable, "-c", "import time; time.sleep(30)"], dict(os.environ), cwd=".")
    try:
        i.interrupt()
        assert sent == [(i.pid, signal.SIGINT)]
    finally:
        i.close()
