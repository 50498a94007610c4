from atenmap.cli import program

program()
