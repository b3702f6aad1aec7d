# Every setting a board has, as a person reads it: value range, default, unit and whether it
# needs a reboot, from the firmware's own tables (firmware/settings.py BOARD_FIELDS and
# shared_fsm/config.py FIELDS, units in the names). Whole sets of values (a `config import`
# file) are checked here with the firmware's own Settings class, so what the host accepts is
# what the board accepts, before anything is sent.
from surepick.firmware import settings as fw
from surepick.shared_fsm.config import FIELDS as MACHINE_FIELDS


class Setting:
    def __init__(self, key, default, lo, hi, reboot, section):
        self.key, self.default, self.lo, self.hi = key, default, lo, hi
        self.reboot = bool(reboot)
        self.section = section          # "board" or "machine" in /config.json
        self.unit = unit_of(key)

    def range_text(self):
        return "%d..%d%s" % (self.lo, self.hi, (" " + self.unit) if self.unit else "")

    @property
    def measure(self):
        # the unit a value is measured in ("ms", "mA"), or "" for flags, masks, pins and counts
        u = self.unit
        return "" if u == "0 or 1" or u.startswith("bit mask") or u in ("GPIO", "ADC channel") else u

    def value_text(self, v):
        # A value as a person reads it, its unit apart: "380 ms", "GPIO 25", "15 (jaw+switch+current+beam)",
        # a 0/1 flag alone (its "unit" says what values it takes, not what they measure).
        if not isinstance(v, int):
            return str(v)
        u = self.unit
        if u == "0 or 1":
            return "%d" % v
        if u.startswith("bit mask"):
            from surepick.shared_fsm.codes import checks_text
            return "%d (%s)" % (v, checks_text(v))
        if u in ("GPIO", "ADC channel"):
            return "%s %d" % (u, v)
        return "%d %s" % (v, u) if u else "%d" % v

    def check(self, value):
        # -> None, or what is wrong with `value` for this setting alone.
        if isinstance(value, bool) or not isinstance(value, int):
            return "%s must be a whole number %s, got %r" % (self.key, self.range_text(), value)
        if not self.lo <= value <= self.hi:
            return "%s must be %s, got %d" % (self.key, self.range_text(), value)
        return None


# Units from name endings (docs/conventions.md: the unit is in the name). Longest ending first.
_UNITS = (
    ("_mdeg_s2", "mdeg/s²"), ("_mdeg_s", "mdeg/s"), ("_um_s", "µm/s"), ("_dps2", "deg/s²"), ("_dps", "deg/s"),
    ("_counts_per_mm", "counts/mm"), ("_counts_per_a", "counts/A"), ("counts_per_mm", "counts/mm"),
    ("counts_per_a", "counts/A"), ("_ms", "ms"), ("_us", "µs"), ("_um", "µm"), ("_mdeg", "mdeg"),
    ("_ma", "mA"), ("_mv", "mV"), ("_hz", "Hz"), ("_counts", "ADC counts"), ("_milli", "/1000"),
    ("_mask", "bit mask: 1 jaw, 2 switch, 4 current, 8 beam"), ("_shift", "bits"),
    ("_bytes", "bytes"), ("_per_tick", "frames per tick"), ("_agree", "checks"),
    ("_attempts", "attempts"),
)


def unit_of(key):
    if key.startswith("pin_"):
        return "GPIO"
    if key.startswith("adc_"):
        return "ADC channel"
    if key == "recover_finish":
        return "0 or 1"
    for end, unit in _UNITS:
        if key.endswith(end):
            return unit
    return ""


SETTINGS = [Setting(*f, section="board") for f in fw.BOARD_FIELDS] + \
           [Setting(*f, section="machine") for f in MACHINE_FIELDS]
BY_KEY = {s.key: s for s in SETTINGS}


def unknown_key_text(key):
    from surepick.firmware import settings as fw
    if key in fw.MOVED_TO_ARM:
        slot, field = fw.MOVED_TO_ARM[key]
        names = ("base", "shoulder", "elbow", "wrist", "gripper")
        return ("%s is no board setting: the servos' pins and pulse calibration are the arm description's "
                "servos.%s.%s (`surepick arm show NAME > my_arm.toml`, edit, `surepick deploy --arm my_arm.toml`)"
                % (key, names[slot], "direction" if field == "inverted" else field))
    import difflib
    near = difflib.get_close_matches(key, BY_KEY, n=3, cutoff=0.6)
    return "no setting %r%s (`surepick config list` shows them all)" % (
        key, "; did you mean %s?" % " or ".join(near) if near else "")


def check_whole(values):
    # values: {key: value} for every setting (a board's, changed by a file). -> None, or the
    # first problem as one line naming the key: alone (range, type) then together (the
    # firmware's relations: pins used twice, min above max, masks that disable a required check).
    for key, v in values.items():
        s = BY_KEY.get(key)
        if s is None:
            return unknown_key_text(key)
        err = s.check(v)
        if err:
            return err
    board = {k: v for k, v in values.items() if BY_KEY[k].section == "board"}
    machine = {k: v for k, v in values.items() if BY_KEY[k].section == "machine"}
    try:
        fw.Settings(board, machine)
    except ValueError as e:          # SettingsError, ConfigError: both name their key
        return str(e)
    return None


def write_order(current, target):
    # The keys that differ, in an order where every intermediate set of values is valid (each
    # CONFIG_SET is checked by the board on its own). -> (order, None), or (None, the problem)
    # when no such order exists (e.g. two pins swapped: set one to a free pin first).
    pending = [k for k in target if target[k] != current.get(k)]
    now = dict(current)
    order = []
    while pending:
        for k in pending:
            trial = dict(now, **{k: target[k]})
            if check_whole(trial) is None:
                now = trial
                order.append(k)
                pending.remove(k)
                break
        else:
            why = check_whole(dict(now, **{pending[0]: target[pending[0]]}))
            return None, ("%s cannot be changed one at a time without passing through an invalid combination "
                          "(%s); change them by hand, e.g. through a free value first" % (", ".join(pending), why))
    return order, None


def read_all(client, timeout=3.0):
    # Every setting's value from the board over the link (CONFIG_GET per key, about 100).
    # -> {key: value}; keys this board does not know are left out. Raises the link's errors;
    # ValueError(message) when the board answers something else than a value.
    from surepick.shared_fsm import link
    out = {}
    for s in SETTINGS:
        r = client.request(link.T_CONFIG_GET, (s.key,), timeout)
        if r.code == link.E_UNKNOWN_KEY:
            continue
        if not r.ok or len(r.payload) < 2 or not isinstance(r.payload[1], int):
            from surepick.host.link.answers import refusal
            raise ValueError("reading %s: %s" % (s.key, refusal(r.code, r.payload)))
        out[s.key] = r.payload[1]
    return out
