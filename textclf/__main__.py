from textclf.cli import main

main()
