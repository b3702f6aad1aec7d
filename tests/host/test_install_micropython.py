# MicroPython onto a Pico in BOOTSEL mode, through the installed CLI: a boot drive is a folder with
# the INFO_UF2.TXT its boot ROM writes (RP2040: "Board-ID: RPI-RP2"; RP2350: "Board-ID: RP2350"),
# so a test stands one up. The image is the real MicroPython RP2040 build the emulator runs; its
# checksum comes from the SHA256SUMS written beside it when it was built (not computed here). The
# pinned table is data: the tests hand the installer a table whose URL is a file:// URL, so the
# real download function runs without a network. No real image is downloaded.
import json
import os

import pytest

from surepick.host.engines.rp2040 import FirmwareMissing, find_uf2
from surepick.host import bootsel

from tests.support.cli import surepick

RP2040_INFO = "UF2 Bootloader v3.0\r\nModel: Raspberry Pi RP2\r\nBoard-ID: RPI-RP2\r\n"
RP2350_INFO = "UF2 Bootloader v1.0\r\nModel: Raspberry Pi RP2350\r\nBoard-ID: RP2350\r\n"


@pytest.fixture
def image():
    try:
        path = find_uf2()
    except FirmwareMissing as e:
        if os.environ.get("CI") == "true":
            pytest.fail(str(e), pytrace=False)
        pytest.skip(str(e))
    sums = {}
    for line in (path.parent / "SHA256SUMS").read_text().splitlines():
        h, name = line.split()
        sums[name] = h
    return path, sums[path.name]


def drive(root, name="RPI-RP2", info=RP2040_INFO):
    d = root / name
    d.mkdir(parents=True)
    (d / bootsel.INFO_FILE).write_text(info)
    return d


def env_for(tmp_path, table=None):
    e = dict(os.environ)
    e[bootsel.ROOTS_ENV] = str(tmp_path / "media")
    e["SUREPICK_UF2_CACHE"] = str(tmp_path / "cache")
    if table is not None:
        e["SUREPICK_MICROPYTHON_IMAGES"] = str(table)
    else:
        e.pop("SUREPICK_MICROPYTHON_IMAGES", None)
    return e


def table_file(tmp_path, uf2, sha256, chip="RP2040", board="pico"):
    t = tmp_path / "images.json"
    t.write_text(json.dumps({"micropython": "1.28.0", "images": {
        board: {"chip": chip, "url": uf2.resolve().as_uri(), "sha256": sha256}}}))
    return t


def uf2_files(folder):
    return sorted(p.name for p in folder.iterdir() if p.suffix == ".uf2")


def test_the_pinned_image_is_downloaded_checked_and_copied_onto_the_drive(tmp_path, image):
    uf2, sha = image
    d = drive(tmp_path / "media")
    table = table_file(tmp_path, uf2, sha)
    r = surepick("install-micropython", "--board", "pico", env=env_for(tmp_path, table))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (d / uf2.name).read_bytes() == uf2.read_bytes()
    assert "copied onto %s" % d in r.stdout and "surepick deploy" in r.stdout
    assert "downloading " + uf2.resolve().as_uri() in r.stdout
    assert (tmp_path / "cache" / uf2.name).read_bytes() == uf2.read_bytes()    # kept for next time
    # again: from the cache, the same bytes
    (d / uf2.name).unlink()
    r = surepick("install-micropython", "--board", "pico", "--drive", d, env=env_for(tmp_path, table))
    assert r.returncode == 0 and "downloading" not in r.stdout, r.stdout
    assert (d / uf2.name).read_bytes() == uf2.read_bytes()


def test_a_checksum_mismatch_copies_nothing_and_keeps_nothing(tmp_path, image):
    uf2, sha = image
    d = drive(tmp_path / "media")
    wrong = ("0" if sha[0] != "0" else "1") + sha[1:]
    r = surepick("install-micropython", "--board", "pico", env=env_for(tmp_path, table_file(tmp_path, uf2, wrong)))
    assert r.returncode == 1
    assert "checksum mismatch" in r.stderr and sha in r.stderr and wrong in r.stderr, r.stderr
    assert uf2_files(d) == []
    assert not (tmp_path / "cache" / uf2.name).exists()
    # a local file against a wrong --sha256: refused too
    r = surepick("install-micropython", "--board", "pico", "--uf2", uf2, "--sha256", wrong,
                 env=env_for(tmp_path, table_file(tmp_path, uf2, None)))
    assert r.returncode == 1 and "checksum mismatch" in r.stderr and uf2_files(d) == []


def test_a_truncated_or_corrupt_download_is_refused_and_not_kept(tmp_path, image):
    # The pinned checksum is the image's; what the download brings is not the image: cut short (a
    # dropped connection) or one byte changed on the way. Refused, named, nothing copied, nothing
    # cached; the whole image at that URL then installs.
    uf2, sha = image
    d = drive(tmp_path / "media")
    whole = uf2.read_bytes()
    served = tmp_path / "served" / uf2.name
    served.parent.mkdir()
    table = table_file(tmp_path, served, sha)
    for bad in (whole[:len(whole) // 2], whole[:100] + bytes([whole[100] ^ 1]) + whole[101:]):
        served.write_bytes(bad)
        r = surepick("install-micropython", "--board", "pico", env=env_for(tmp_path, table))
        assert r.returncode == 1, r.stdout + r.stderr
        assert "checksum mismatch" in r.stderr and "expected %s; nothing was copied" % sha in r.stderr, r.stderr
        assert uf2_files(d) == [] and not (tmp_path / "cache" / uf2.name).exists()
    served.write_bytes(whole)
    r = surepick("install-micropython", "--board", "pico", env=env_for(tmp_path, table))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (d / uf2.name).read_bytes() == whole


def test_an_image_for_the_other_chip_is_refused(tmp_path, image):
    uf2, sha = image
    d = drive(tmp_path / "media", "RP2350", RP2350_INFO)
    # the board named does not match the drive's chip
    r = surepick("install-micropython", "--board", "pico", env=env_for(tmp_path, table_file(tmp_path, uf2, sha)))
    assert r.returncode == 1 and "RP2040 board, but the drive at %s is an RP2350's" % d in r.stderr, r.stderr
    # an RP2040 image (right checksum) onto an RP2350 drive: its UF2 blocks say RP2040
    r = surepick("install-micropython", "--board", "pico2", "--uf2", uf2, "--sha256", sha,
                 env=env_for(tmp_path, table_file(tmp_path, uf2, None, "RP2350", "pico2")))
    assert r.returncode == 1 and "this UF2 image is for RP2040, not for the RP2350" in r.stderr, r.stderr
    assert uf2_files(d) == []


def test_a_local_image_with_its_checksum_is_copied(tmp_path, image):
    uf2, sha = image
    d = drive(tmp_path / "media")
    r = surepick("install-micropython", "--board", "pico", "--uf2", uf2, "--sha256", sha,
                 env=env_for(tmp_path, table_file(tmp_path, uf2, None)))
    assert r.returncode == 0, r.stderr
    assert (d / uf2.name).read_bytes() == uf2.read_bytes()


def test_no_pinned_checksum_means_no_download(tmp_path):
    # An entry without a checksum (as the shipped table's are until someone pins them) is refused
    # before anything is fetched: the URL here could not be reached anyway.
    drive(tmp_path / "media")
    t = tmp_path / "images.json"
    url = "https://micropython.invalid/RPI_PICO.uf2"
    t.write_text(json.dumps({"micropython": "1.28.0", "images": {"pico": {"chip": "RP2040", "url": url, "sha256": None}}}))
    r = surepick("install-micropython", "--board", "pico", env=env_for(tmp_path, t))
    assert r.returncode == 1 and "pins no checksum for the pico image (%s)" % url in r.stderr, r.stderr
    assert "--uf2 FILE --sha256 HEX" in r.stderr
    assert not (tmp_path / "cache").exists()


def test_the_shipped_table_loads_and_names_every_board():
    from surepick.host.micropython_install import load_table
    t, _ = load_table(micropython_install_default())
    assert {b: e["chip"] for b, e in t["images"].items()} == {
        "pico": "RP2040", "pico_w": "RP2040", "pico2": "RP2350", "pico2_w": "RP2350"}
    assert all(e["url"].startswith("https://micropython.org/") for e in t["images"].values())


def micropython_install_default():
    from surepick.host.micropython_install import DEFAULT_TABLE
    return DEFAULT_TABLE


def test_no_drive_and_a_folder_that_is_no_drive(tmp_path):
    (tmp_path / "media").mkdir()
    r = surepick("install-micropython", "--board", "pico2", env=env_for(tmp_path))
    assert r.returncode == 1 and "no Pico in BOOTSEL mode is mounted" in r.stderr
    other = tmp_path / "media" / "USBSTICK"
    other.mkdir()
    (other / bootsel.INFO_FILE).write_text("UF2 Bootloader v3.0\nBoard-ID: SAMD21\n")
    r = surepick("install-micropython", "--board", "pico2", "--drive", other, env=env_for(tmp_path))
    assert r.returncode == 1 and "is not a Pico's boot drive" in r.stderr


@pytest.mark.parametrize("verb", ["deploy", "doctor"])
def test_deploy_and_doctor_recognise_a_board_in_bootsel_mode(tmp_path, verb):
    d = drive(tmp_path / "media", "RP2350", RP2350_INFO)
    r = surepick(verb, "--port", tmp_path / "ttyACM9", env=env_for(tmp_path), timeout=120)
    assert r.returncode == 1
    out = r.stdout + r.stderr
    assert "a Pico in BOOTSEL mode is mounted at %s" % d in out, out
    assert "surepick install-micropython --board pico2 --drive %s" % d in out
