"""Analysis of rollout runs: per-task tables, bootstrap intervals, run comparison, the report.

    tables.py     one row per task of a run (pandas), from the run's files or a snapshot
    bootstrap.py  mean, standard error and a seeded bootstrap interval over tasks
    estimates.py  the statistics block: reward and pass@k per benchmark × harness
    compare.py    two runs paired by task index and input digest
    history.py    per-task snapshots of a run dir's past runs, for the compare view
    report.py     the self-contained HTML report (inline SVG plots)
    publish.py    what a run writes: statistics, snapshot, comparison, report
    results.py    a run's result (model, outcomes, estimates): what the scoreboard reads
    scoreboard.py every result per benchmark × harness × model, with history and change
    scoreboard_page.py  the scoreboard as Markdown and a self-contained HTML page

pandas, numpy and matplotlib are imported here and nowhere else, so the command line's
``--help`` and the commands that do not analyse stay fast.
"""
