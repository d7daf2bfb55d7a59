from filegate.cli import main

raise SystemExit(main())
