from sigclass.cli import main

main()
