"""projloss benchmark suite (issue 7), run on demand with ``make bench``; not part of CI."""
