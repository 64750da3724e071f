/**
 * The part of `@lhncbc/ucum-lhc` (which ships no type declarations) that `unitConversion.ts` uses.
 * Member names are the library's own (https://github.com/lhncbc/ucum-lhc#api-reference).
 */
declare module '@lhncbc/ucum-lhc' {
  /** A unit as the library parsed it; `isSpecial_` marks non-linear units such as `Cel` and `[degF]`. */
  export interface UcumUnit {
    csCode_: string;
    isSpecial_: boolean;
  }

  export interface UcumConversion {
    status: 'succeeded' | 'failed' | 'error';
    toVal: number | null;
    msg: string[];
    fromUnit?: UcumUnit;
    toUnit?: UcumUnit;
  }

  export interface UcumLhcUtils {
    /**
     * Converts `fromVal` from one unit to another. `molecularWeight` (g/mol) allows mass ↔ substance
     * conversions (mg/dL ↔ mmol/L).
     */
    convertUnitTo(
      fromUnitCode: string,
      fromVal: number,
      toUnitCode: string,
      options?: { suggestions?: boolean; molecularWeight?: number; charge?: number },
    ): UcumConversion;
  }

  const ucum: {
    /** getInstance() makes a new object on every call; the prototype is what they all share. */
    UcumLhcUtils: { getInstance(): UcumLhcUtils; prototype: UcumLhcUtils };
  };
  export default ucum;
}
