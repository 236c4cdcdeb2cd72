"""Replaying a run's timeline with a change applied: what fixing a finding would save.

`Timeline.of(run)` infers the program behind the records (resources and
edges, `timeline`); `replay`/`replayed_wall` re-time it with a `Fix`
applied (`schedule`); `fixes` builds the fixes the runtime rules advise.
Expected saving = replayed(original) - replayed(fixed).
"""

from .fixes import drop_syncs, fuse, hoist, keep_resident, pack, page_lock
from .schedule import NO_FIX, Fix, Schedule, replay, replayed_wall, saving
from .timeline import Timeline

__all__ = ["Fix", "NO_FIX", "Schedule", "Timeline", "drop_syncs", "fuse", "hoist", "keep_resident", "pack",
           "page_lock", "replay", "replayed_wall", "saving"]
