-- 007: reserved for another branch (issues 13 and 14 hold 005-007),
-- which brings the real 007. This placeholder only keeps the versions
-- contiguous on branch issue15-readpath: delete it when merging, and
-- never apply it to a database that will get the real 007.
SELECT 1;
