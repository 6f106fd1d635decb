from textclf.frontends.cli import main

main()
