from sigclass.cli.app import main

main()
