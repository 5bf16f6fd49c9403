"""`python -m examples.crew run PLAN --input "..." [--job ID]`: see examples/crew/README.md."""

from examples.crew.cli import main

raise SystemExit(main())
