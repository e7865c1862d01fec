from chaoskit.cli import main

main()
