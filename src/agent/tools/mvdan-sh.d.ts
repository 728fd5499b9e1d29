/**
 * The part of `mvdan-sh` (mvdan/sh's Go `syntax` package built to JavaScript with GopherJS) that
 * shell-syntax.ts uses. Nodes are GopherJS objects whose fields are named as in the Go package
 * (https://pkg.go.dev/mvdan.cc/sh/v3/syntax); shell-syntax.ts reads them by name.
 */
declare module 'mvdan-sh' {
  export interface ShPos {
    Offset(): number;
    Line(): number;
    Col(): number;
  }
  export interface ShNode {
    Pos(): ShPos;
    End(): ShPos;
    readonly [field: string]: unknown;
  }
  export interface ShParser {
    /** Throws a parse error (an object with `Error()`) when the source is not valid shell. */
    Parse(source: string, name: string): ShNode;
  }
  export type ShParserOption = { readonly __option: unique symbol };
  export interface ShLang {
    readonly __lang: unique symbol;
  }
  export const syntax: {
    NewParser(...options: ShParserOption[]): ShParser;
    KeepComments(keep: boolean): ShParserOption;
    Variant(lang: ShLang): ShParserOption;
    LangPOSIX: ShLang;
    LangBash: ShLang;
    NodeType(node: ShNode): string;
    Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void;
  };
}
