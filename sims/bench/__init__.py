"""`kbes bench`: every hot path measured, side by side with a plain-sqlite3 baseline.

Each measurement runs several times and reports the median, min and max of the runs, with the
baseline (`kbes.sims.baseline`, the same operation written directly on sqlite3) where one
applies, and the ratio kbes / baseline. Everything runs on throwaway SQLite files in WAL mode;
kbes is measured at its default durability (`synchronous=FULL`, the baseline's too) unless a
row says otherwise. Large datasets are built once per run through the product's own save path
in big batches (bulk loads use `synchronous=OFF`: they are throwaway), then measured at the
default durability.

One module per group of rows (`edits` row 1, `reads` row 2, `polls` row 3, `history` row 4,
`caught_up` row 5, `rebuild` row 6, `startup` row 7, `sim_day` row 8, `push` row 9,
`isolation` row 10, `quality` row 11, `hybrid_speed` row 12, `mcp_search` row 13); `runner`
runs the groups asked for and `table` prints the report. (`kbes sim --benchmark` is
`kbes.sims.sim_benchmark`.)
"""
