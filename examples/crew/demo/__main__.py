"""`python -m examples.crew.demo [--all | --fix-until-green | --review | --scripted | --manifest
PATH] [--keep]`: see examples/crew/README.md, "The demo"."""

from examples.crew.demo.phases import main

raise SystemExit(main())
