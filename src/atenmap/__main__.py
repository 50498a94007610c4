from atenmap.cli import main

main()
