"""Long work is never silent: a live bar on a terminal, periodic lines elsewhere, counts and rates only."""
import io

from pipeline.progress import Progress


def test_periodic_lines_when_not_a_terminal():
    out = io.StringIO()
    bar = Progress("dedup", "records", total=300, stream=out, tty=False, interval=0.0)
    for _ in range(3):
        bar.update(100)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4 and lines[-1].startswith("dedup: 300 of 300 records (")
    assert lines[0].startswith("dedup: 100 of 300 records (") and "/s, " in lines[0]


def test_interval_limits_the_lines_and_a_log_callback_takes_them():
    seen = []
    bar = Progress("read", "records", stream=io.StringIO(), tty=False, interval=3600, log=seen.append)
    for _ in range(1000):
        bar.update()
    bar.close()
    assert seen == [seen[-1]] and seen[0].startswith("read: 1,000 records (")


def test_disabled_prints_nothing():
    out = io.StringIO()
    with Progress("x", stream=out, tty=False, interval=0.0, enabled=False) as bar:
        bar.update(5)
    assert out.getvalue() == ""
