# scripts/completion/qmmcheck.bash — bash completion for qmmcheck(1), installed to
# share/bash-completion/completions/qmmcheck. The commands and each command's options are read
# from qmmcheck itself (`qmmcheck help`, `qmmcheck CMD --help`, made from the same tables as
# its parser), so the completion cannot fall behind the program.

# The option lines of `qmmcheck CMD --help`: "  -b, --backend SPEC   help" or "      --isolate  help".
_qmmcheck_option_re='^ +(-[A-Za-z], )?(--[a-z0-9-]+)( [^ ]+)?  '

_qmmcheck()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local prog=${COMP_WORDS[0]} line
    COMPREPLY=()
    if ((COMP_CWORD == 1)); then
        local cmds
        cmds=$("$prog" help 2>/dev/null | sed -n 's/^  \([a-z][a-z]*\).*/\1/p')
        COMPREPLY=($(compgen -W "$cmds --help --version -V" -- "$cur"))
        return 0
    fi
    local cmd=${COMP_WORDS[1]} help
    help=$("$prog" "$cmd" --help 2>/dev/null) || return 0
    if [[ $cmd == help ]]; then
        ((COMP_CWORD == 2)) &&
            COMPREPLY=($(compgen -W "$("$prog" help 2>/dev/null |
                                       sed -n 's/^  \([a-z][a-z]*\).*/\1/p')" -- "$cur"))
        return 0
    fi
    # the value of an option that takes one, by its placeholder
    local opts="" value=""
    while IFS= read -r line; do
        [[ $line =~ $_qmmcheck_option_re ]] || continue
        opts+=" ${BASH_REMATCH[2]}"
        [[ -n ${BASH_REMATCH[1]} ]] && opts+=" ${BASH_REMATCH[1]%, }"
        if [[ $prev == "${BASH_REMATCH[2]}" || $prev == "${BASH_REMATCH[1]%, }" ]]; then
            value=${BASH_REMATCH[3]# }
        fi
    done <<<"$help"
    if [[ -n $value ]]; then
        case $value in
        *DIR) COMPREPLY=($(compgen -d -- "$cur")) ;;
        SPEC) COMPREPLY=($(compgen -W "reference optimized exec:" -- "$cur")
                         $(compgen -f -- "$cur")) ;;
        *FILE) COMPREPLY=($(compgen -f -- "$cur")) ;;
        esac
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
    else
        COMPREPLY=($(compgen -d -- "$cur")) # vector trees and case directories
    fi
    return 0
}
complete -o filenames -F _qmmcheck qmmcheck
